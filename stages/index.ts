import type { StageDefinition } from "../pipeline/engine/stage.ts";
import { answersStage } from "./answers/index.ts";
import { localityStage } from "./locality/index.ts";
import { mineStage } from "./mine/index.ts";
import { qualifyStage } from "./qualify/index.ts";
import { reconstructStage } from "./reconstruct/index.ts";
import { auditStage } from "./audit/index.ts";
import { emitStage } from "./emit/index.ts";
import { oracleStage } from "./oracle/index.ts";
import { scheduleStage } from "./schedule/index.ts";
import { selectStage } from "./select/index.ts";
import { validateStage } from "./validate/index.ts";
import { splitStage } from "./split/index.ts";

/**
 * The stages this build has (the engine orders them by the artifacts each reads, which gives
 * SPEC §2's order; stages ready at once keep this order). A stage of SPEC §2 missing here shows
 * as "not built" in every run summary.
 */
export const BUILT_STAGES: StageDefinition<any>[] = [
  mineStage,
  splitStage,
  qualifyStage,
  reconstructStage,
  auditStage,
  oracleStage,
  localityStage,
  answersStage,
  selectStage,
  scheduleStage,
  validateStage,
  emitStage,
];
