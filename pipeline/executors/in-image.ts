/**
 * The layout of an environment's image and of a test run in one: where the environment's pieces
 * sit, who a guarded run's tests run as, and a run's whole environment. The Docker executor's
 * images have it, and so do the Harbor export's, whose verifier runs inside its image (kept apart
 * from the Docker executor, which the verifier's bundle must not carry).
 */

/** Where an environment's pieces sit inside its image. */
export const IN_IMAGE = { venv: "/env", config: "/opt/switch-swe", cache: "/uv-cache", work: "/work", baseFiles: "/opt/switch-swe/base-files.txt" };
/** The PATH of every container made from an environment's image. */
export const RUN_PATH = "PATH=/env/bin:/usr/local/bin:/usr/bin:/bin";

/**
 * A guarded run's tests (a submission's) run as this user (Debian's `nobody`), with no
 * capabilities: the environment, the runner and its configuration belong to root and cannot be
 * changed by the code under test. A revision image's prepared checkout belongs to it.
 */
export const RUN_USER = "65534:65534";

/** A test run's whole environment (a guarded run's adds who it runs as): nothing from the host's. */
export const RUN_ENV = [RUN_PATH, "HOME=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"];
export const GUARDED_RUN_ENV = [...RUN_ENV, "USER=nobody", "LOGNAME=nobody"];
