export { answerFacts, containsBlock, type AnswerFacts, type SearchableHunk } from "./answer.ts";
export { answerEvidence, describeEvidence } from "./held.ts";
export { findFixCommit, PullRequestMerges } from "./fix-commit.ts";
export { TreeReader } from "./tree-reader.ts";
export { RepositoryAnswers } from "./repository.ts";
