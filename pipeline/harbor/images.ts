import { baseImageScript, DEBIAN_FOR_PYTHON } from "../executors/base-images.ts";
import { baseImageFor, IN_IMAGE, RUN_USER } from "../executors/docker.ts";
import { environmentScript, quote, SYNC_SCRIPT_NAME } from "../executors/recipe-scripts.ts";
import { CA_CANDIDATES, type EnvironmentSpec } from "../executors/types.ts";
import { IN_VERIFIER, OBSERVED, VERIFIER_FILES } from "./layout.ts";

/**
 * The two images of an exported task, as Dockerfiles: the agent's (the focus task's environment
 * and the five checkouts) and the last step's verifier's (the same environment, switch-swe's
 * verify run by Node, and the focus task's held-out files). Both are built from the scripts
 * switch-swe's Docker executor builds its images with (recipe-scripts.ts), so a task's
 * environment is the one `verify` and `session run` use; their first steps are the same, so an
 * engine builds the environment once for both.
 */

/** Where the build's own files go in an image (removed once used). */
const BUILD = "/opt/switch-swe-build";

export interface ImageOptions {
  /** The image to start from; default switch-swe's base image of the Debian suite whose python3 the recipe asks for. */
  baseImage?: string;
  /** A CA bundle (PEM) the build trusts instead of the image's: behind a TLS-intercepting proxy between the builder and PyPI. */
  caBundle?: string;
}

/**
 * The CA bundle the image builds trust when none is given: the file the executors' builds trust
 * when this process's environment names one (SSL_CERT_FILE, PIP_CERT, REQUESTS_CA_BUNDLE), so an
 * export behind a TLS-intercepting proxy builds as `verify` does; the system's own bundle is not
 * taken (a dataset built elsewhere trusts its builder's).
 */
export function caBundleFromEnvironment(env: NodeJS.ProcessEnv = process.env): { variable: string; file: string } | undefined {
  const variable = CA_CANDIDATES.find((k) => env[k]);
  return variable ? { variable, file: env[variable]! } : undefined;
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

/** The Dockerfile steps both images start with: the base, then (`between` first) the environment (a venv at /env), as switch-swe builds it. */
function environmentSteps(env: EnvironmentSpec, options: ImageOptions, between: string[] = []): string[] {
  return [
    `FROM ${baseOf(env, options).image}`,
    "USER root",
    `COPY switch-swe/base.sh ${BUILD}/base.sh`,
    `RUN sh ${BUILD}/base.sh`,
    ...between,
    ...(options.caBundle ? [`COPY switch-swe/build-ca.crt ${BUILD}/build-ca.crt`] : []),
    `COPY switch-swe/environment.sh ${BUILD}/environment.sh`,
    `RUN ${caVariables(options)}sh ${BUILD}/environment.sh && rm -rf ${IN_IMAGE.cache}`,
    `ENV PATH=${IN_IMAGE.venv}/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8`,
  ];
}

export interface AgentImage {
  /** Each checkout's session path and its archive in the build context. */
  checkouts: { path: string; archive: string }[];
  workdir: string;
  user: { name: string; uid: number };
}

/**
 * The agent's image: the environment, the agent's user, each checkout unpacked from its archive
 * (files and one-commit history as the session runner makes them, the user's), the script that
 * observes the checkouts after each request (root's alone) and its first observation.
 */
export function agentDockerfile(env: EnvironmentSpec, options: ImageOptions, image: AgentImage): string {
  const parents = [...new Set(image.checkouts.map((c) => c.path.replace(/\/[^/]+$/, "") || "/"))].filter((p) => p !== "/");
  const paths = [...parents, ...image.checkouts.map((c) => c.path)].map(quote).join(" ");
  return [
    "# The agent's image of a Switch-SWE session (switch-swe export harbor): the focus task's environment, as",
    "# switch-swe builds it, and the session's five checkouts at their base revisions. Nothing held out is here.",
    ...environmentSteps(env, options),
    // useradd is in sbin, which the environment's PATH leaves out.
    `RUN /usr/sbin/useradd --create-home --uid ${image.user.uid} --shell /bin/bash ${image.user.name}`,
    ...image.checkouts.map((c) => `ADD ${c.archive} ${c.path}/`),
    `COPY switch-swe/observe.sh ${OBSERVED.script}`,
    `RUN chown ${image.user.name}: ${paths} && chmod 700 ${OBSERVED.dir} && sh ${OBSERVED.script} ${OBSERVED.base}`,
    `WORKDIR ${image.workdir}`,
    "",
  ].join("\n");
}

/** What the verifier's build context holds besides the environment's scripts: its files (layout.ts VERIFIER_FILES), and the revision layer's script where the recipe installs from the checkout. */
export interface VerifierImage {
  revision?: string;
}

/**
 * The last step's verifier image: the Node that runs verify first (one layer for every task of a
 * base image), the environment, the focus base revision prepared and installed at /work where
 * the recipe installs from the checkout (as switch-swe's revision image has it, owned by the user
 * the tests run as), the focus base as a one-commit repository, and verify with its input.
 */
export function verifierDockerfile(env: EnvironmentSpec, options: ImageOptions, image: VerifierImage): string {
  const tests = (file: string) => `${IN_VERIFIER.tests}/${file}`;
  const prepared = image.revision
    ? [
        `ADD ${VERIFIER_FILES.revision} /checkout/`,
        `COPY switch-swe/revision.sh ${BUILD}/revision.sh`,
        `RUN mkdir -p ${IN_IMAGE.work}` +
          ` && ${IN_IMAGE.venv}/bin/python ${IN_IMAGE.config}/${SYNC_SCRIPT_NAME} overlay /checkout ${IN_IMAGE.work} /dev/null` +
          ` && ${caVariables(options)}sh ${BUILD}/revision.sh` +
          ` && chown -R ${RUN_USER} ${IN_IMAGE.work} && rm -rf /checkout ${IN_IMAGE.cache} ${BUILD}`,
      ]
    : [];
  return [
    "# The verifier's image of a Switch-SWE session's last step (switch-swe export harbor): Harbor runs it as a",
    "# separate verifier, into which it copies the agent's final focus checkout; switch-swe's verify scores it.",
    ...environmentSteps(env, options, [`COPY ${VERIFIER_FILES.node} ${tests(VERIFIER_FILES.node)}`, `RUN ${tests(VERIFIER_FILES.node)} --version`]),
    ...prepared,
    `ADD ${VERIFIER_FILES.mirror} ${IN_VERIFIER.tests}/${VERIFIER_FILES.mirror.replace(/\/[^/]+$/, "")}/`,
    ...[VERIFIER_FILES.program, VERIFIER_FILES.input, VERIFIER_FILES.script].map((f) => `COPY ${f} ${tests(f)}`),
    "",
  ].join("\n");
}

/**
 * The image of every step's verifier but the last: the base image and the script that writes an
 * empty reward, nothing else. Its build context is the same for every task of a base image, so
 * Harbor (which names an image by its context's hash) builds it once; it spares each step a
 * container of the agent's image, whose context holds the checkouts.
 */
export function stepVerifierDockerfile(env: EnvironmentSpec, options: ImageOptions): string {
  return [
    "# The verifier of every request but a session's last (switch-swe export harbor): it scores nothing.",
    `FROM ${baseOf(env, options).image}`,
    `COPY test.sh ${IN_VERIFIER.tests}/test.sh`,
    "",
  ].join("\n");
}
