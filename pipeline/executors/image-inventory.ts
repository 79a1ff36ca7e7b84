import type Docker from "dockerode";
import { BASE_REPOSITORY, ENV_REPOSITORY, REVISION_REPOSITORY } from "./docker.ts";

export interface ImageInfo {
  tag: string;
  size: number;
  repo?: string;
}

export async function listImages(docker: Docker): Promise<ImageInfo[]> {
  const images = await docker.listImages();
  return images
    .flatMap((image) => (image.RepoTags ?? []).map((tag) => ({ tag, size: image.Size, repo: image.Labels?.["org.switch-swe.repo"] })))
    .filter((i) => [BASE_REPOSITORY, ENV_REPOSITORY, REVISION_REPOSITORY].some((repository) => i.tag.startsWith(`${repository}:`)))
    .sort((a, b) => (a.tag < b.tag ? -1 : 1));
}

export async function pruneImages(docker: Docker, all: boolean): Promise<string[]> {
  const removed: string[] = [];
  // revision images first: each is a child of an environment image, which is a child of a base image
  for (const image of (await listImages(docker)).reverse()) {
    if (!all && image.tag.startsWith(`${BASE_REPOSITORY}:`)) continue;
    await docker.getImage(image.tag).remove({ force: true });
    removed.push(image.tag);
  }
  return removed;
}
