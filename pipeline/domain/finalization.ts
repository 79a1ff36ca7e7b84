/**
 * The one finalization request (SPEC §1): it closes every session, in both conditions, and states
 * no requirement. reconstruct never produces it; schedule appends it.
 */
export const FINALIZATION_TEXT = "Finish this task and prepare it for evaluation: complete the work you consider unfinished, then stop.";
