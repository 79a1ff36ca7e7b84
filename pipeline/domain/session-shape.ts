/** The five role-neutral checkouts of a session (SPEC §1), unless the config names others. */
export const DEFAULT_CHECKOUTS = ["/workspace/w00", "/workspace/w01", "/workspace/w02", "/workspace/w03", "/workspace/w04"];

/** Interruption tasks per session (SPEC §2.7). */
export const DEFAULT_INTERRUPTIONS = 4;
