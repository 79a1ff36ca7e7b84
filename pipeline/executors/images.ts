import type Docker from "dockerode";
import { BASE_REPOSITORY, ENV_REPOSITORY } from "./docker.ts";

export interface ImageInfo {
  tag: string;
  size: number;
  repo?: string;
}

export async function listImages(docker: Docker): Promise<ImageInfo[]> {
  const images = await docker.listImages();
  return images
    .flatMap((image) => (image.RepoTags ?? []).map((tag) => ({ tag, size: image.Size, repo: image.Labels?.["org.switch-swe.repo"] })))
    .filter((i) => i.tag.startsWith(`${BASE_REPOSITORY}:`) || i.tag.startsWith(`${ENV_REPOSITORY}:`))
    .sort((a, b) => (a.tag < b.tag ? -1 : 1));
}

export async function pruneImages(docker: Docker, all: boolean): Promise<string[]> {
  const removed: string[] = [];
  for (const image of await listImages(docker)) {
    if (!all && image.tag.startsWith(`${BASE_REPOSITORY}:`)) continue;
    await docker.getImage(image.tag).remove({ force: true });
    removed.push(image.tag);
  }
  return removed;
}
