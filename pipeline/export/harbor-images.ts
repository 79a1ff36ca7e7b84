import { baseImageScript, DEBIAN_FOR_PYTHON } from "../executors/base-images.ts";
import { baseImageFor, IN_IMAGE, RUN_USER } from "../executors/docker.ts";
import { environmentScript, quote, SYNC_SCRIPT_NAME } from "../executors/recipe-scripts.ts";
import type { EnvironmentSpec } from "../executors/types.ts";

/**
 * The two images of an exported task, as Dockerfiles: the agent's (the focus task's environment
 * and the five checkouts) and the verifier's (the same environment, the focus task's prepared
 * checkout where its recipe installs from it, and the held-out files). Both are built from the
 * scripts switch-swe's Docker executor builds its images with (recipe-scripts.ts), so a task's
 * environment is the one `verify` and `session run` use; their first steps are the same, so an
 * engine builds the environment once for both.
 */

/** Where the build's own files go in an image (removed once used, except the environment's). */
const BUILD = "/opt/switch-swe-build";

/** Git as the session runner makes each checkout (pipeline/checkouts/snapshot.ts provisionCheckout): one commit, `base`, at a fixed date. */
const CHECKOUT_COMMIT_ENV = [
  "GIT_CONFIG_NOSYSTEM=1",
  "GIT_CONFIG_GLOBAL=/dev/null",
  "GIT_AUTHOR_NAME=switch-swe",
  "GIT_AUTHOR_EMAIL=switch-swe@localhost",
  "GIT_COMMITTER_NAME=switch-swe",
  "GIT_COMMITTER_EMAIL=switch-swe@localhost",
  "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
  "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
];

export interface ImageOptions {
  /** The image to start from; default switch-swe's base image of the Debian suite whose python3 the recipe asks for. */
  baseImage?: string;
  /** A CA bundle (PEM) the build trusts instead of the image's: behind a TLS-intercepting proxy between the builder and PyPI. */
  caBundle?: string;
}

/** The image a task's images start from, and the Debian suite it is (or stands for). */
export function baseOf(env: EnvironmentSpec, options: ImageOptions): { image: string; suite: string; interpreter: string | null } {
  const { image, interpreter } = baseImageFor(env.recipe.python);
  return { image: options.baseImage ?? image, suite: DEBIAN_FOR_PYTHON[env.recipe.python] ?? image.split(":")[1]!, interpreter };
}

/** The build context's files every image of a task needs: the base's and the environment's scripts, and the CA bundle if one is given. */
export function environmentFiles(env: EnvironmentSpec, options: ImageOptions): Map<string, string> {
  const { interpreter, suite } = baseOf(env, options);
  const packages = env.recipe.debian_packages.length
    ? `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${env.recipe.debian_packages.join(" ")} && rm -rf /var/lib/apt/lists/*\n`
    : "";
  const files = new Map([
    ["switch-swe/base.sh", baseImageScript(suite) + "\n"],
    ["switch-swe/environment.sh", packages + environmentScript(env, { ...IN_IMAGE, interpreter })],
  ]);
  if (options.caBundle) files.set("switch-swe/build-ca.crt", options.caBundle);
  return files;
}

/** The CA bundle's variables for a build step that reaches PyPI, as switch-swe's executor gives its builds. */
const caVariables = (options: ImageOptions) => (options.caBundle ? `SSL_CERT_FILE=${BUILD}/build-ca.crt PIP_CERT=${BUILD}/build-ca.crt ` : "");

/** The Dockerfile steps both images start with: the base, then the environment (a venv at /env), as switch-swe builds it. */
function environmentSteps(env: EnvironmentSpec, options: ImageOptions): string[] {
  return [
    `FROM ${baseOf(env, options).image}`,
    "USER root",
    `COPY switch-swe/base.sh ${BUILD}/base.sh`,
    `RUN sh ${BUILD}/base.sh`,
    ...(options.caBundle ? [`COPY switch-swe/build-ca.crt ${BUILD}/build-ca.crt`] : []),
    `COPY switch-swe/environment.sh ${BUILD}/environment.sh`,
    `RUN ${caVariables(options)}sh ${BUILD}/environment.sh && rm -rf ${IN_IMAGE.cache}`,
    `ENV PATH=${IN_IMAGE.venv}/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8`,
  ];
}

/** The script that makes each checkout what the session runner makes it: its base revision's files, in a git repository of one commit. */
export function provisionScript(checkouts: { path: string; archive: string }[], agentUser: { name: string; uid: number }): string {
  // useradd is in sbin, which the environment's PATH leaves out.
  const lines = ["set -eu", 'export PATH="$PATH:/usr/sbin:/sbin"', `export ${CHECKOUT_COMMIT_ENV.join(" ")}`];
  for (const c of checkouts) {
    lines.push(`mkdir -p ${quote(c.path)} && tar -x -f ${quote(`${BUILD}/${c.archive}`)} -C ${quote(c.path)}`);
    lines.push(
      `(cd ${quote(c.path)} && git init --quiet --initial-branch=main && git add --all --force && git commit --quiet --no-gpg-sign --allow-empty -m base)`,
    );
  }
  lines.push(`useradd --create-home --uid ${agentUser.uid} --shell /bin/bash ${agentUser.name}`);
  const parents = [...new Set(checkouts.map((c) => c.path.replace(/\/[^/]+$/, "") || "/"))];
  lines.push(`chown -R ${agentUser.name}: ${checkouts.map((c) => quote(c.path)).join(" ")}`);
  for (const parent of parents.filter((p) => p !== "/")) lines.push(`chown ${agentUser.name}: ${quote(parent)}`);
  lines.push(`rm -rf ${BUILD}/checkouts`);
  return lines.join("\n") + "\n";
}

/** The agent's image: the environment, then the five checkouts (their archives are in the context's checkouts/). */
export function agentDockerfile(env: EnvironmentSpec, options: ImageOptions, archives: string[], workdir: string): string {
  return [
    "# The agent's image of a Switch-SWE session (switch-swe export harbor): the focus task's environment, as",
    "# switch-swe builds it, and the session's five checkouts at their base revisions. Nothing held out is here.",
    ...environmentSteps(env, options),
    ...archives.map((a) => `COPY checkouts/${a} ${BUILD}/checkouts/${a}`),
    `COPY switch-swe/provision.sh ${BUILD}/provision.sh`,
    `RUN sh ${BUILD}/provision.sh && rm ${BUILD}/provision.sh`,
    `WORKDIR ${workdir}`,
    "",
  ].join("\n");
}

/**
 * The verifier's image: the environment, and where the recipe installs from the checkout, the
 * focus task's base revision prepared and installed at /work as switch-swe's revision image has it
 * (owned by the user the tests run as); then the held-out files at /tests.
 */
export function verifierDockerfile(env: EnvironmentSpec, options: ImageOptions, revision: { script: string } | undefined, testsFiles: string[]): string {
  const prepared = revision
    ? [
        `COPY focus-base.tar ${BUILD}/focus-base.tar`,
        `COPY switch-swe/revision.sh ${BUILD}/revision.sh`,
        `RUN mkdir -p /checkout ${IN_IMAGE.work} && tar -x -f ${BUILD}/focus-base.tar -C /checkout` +
          ` && ${IN_IMAGE.venv}/bin/python ${IN_IMAGE.config}/${SYNC_SCRIPT_NAME} overlay /checkout ${IN_IMAGE.work} /dev/null` +
          ` && ${caVariables(options)}sh ${BUILD}/revision.sh` +
          ` && chown -R ${RUN_USER} ${IN_IMAGE.work} && rm -rf /checkout ${IN_IMAGE.cache} ${BUILD}/revision.sh`,
      ]
    : [];
  return [
    "# The verifier's image of a Switch-SWE session (switch-swe export harbor): Harbor runs it as a separate",
    "# verifier, into which it copies the agent's final focus checkout. The held-out files are here only.",
    ...environmentSteps(env, options),
    ...prepared,
    ...testsFiles.map((f) => `COPY ${f} /tests/${f}`),
    "",
  ].join("\n");
}
