import type { DiscussionItem } from "../../pipeline/schemas/candidate.ts";

export type CommentClass =
  | "substantive"
  | "suggestion"
  | "bot"
  | "approval_only"
  | "progress_only"
  | "duplicate"
  | "question"
  | "dismissed"
  | "needs_reference"
  | "no_requirement"
  | "author"
  | "post_merge"
  | "empty";

/** Classes whose text can become (part of) a request. */
export const REQUEST_CLASSES: ReadonlySet<CommentClass> = new Set(["substantive", "suggestion"]);

const APPROVAL = /^(lgtm|looks good( to me)?|approved?|ship it|👍|:\+1:|\+1)\b[\s\S]{0,40}$/i;
const PROGRESS = /^(thanks|thank you|done|fixed|rebased|addressed|updated|will do|ok|sure)\b/i;
const NEEDS_REFERENCE = /\b(my commit|the diff above|see (the )?diff|as in [0-9a-f]{7,40}|in commit [0-9a-f]{7,40}|the way I did)\b|\/commit\/[0-9a-f]{7,40}/i;
const REQUIREMENT = /\b(should|must|please|add|raise|return|accept|rename|remove|support|needs? to|make|declare|handle|reject|keep|cover|avoid|use)\b|`[^`]+`/i;

function normalise(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
}

export interface Classified {
  item: DiscussionItem;
  class: CommentClass;
  reason: string;
}

/**
 * Classifies each discussion item of a pull request, in time order, with the reason, so a
 * curator can see why anything was left out. The PR author's own comments never state
 * requirements (they answer them); comments after the merge are out of scope.
 */
export function classifyDiscussion(items: DiscussionItem[], prAuthor: string, mergedAt: string): Classified[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const body = item.body.trim();
    const key = `${item.author}\0${normalise(body)}`;
    const result = (cls: CommentClass, reason: string): Classified => ({ item, class: cls, reason });
    if (item.created_at > mergedAt) return result("post_merge", `written after the merge (${mergedAt})`);
    if (item.author_type === "Bot" || item.author.endsWith("[bot]")) return result("bot", `${item.author} is a bot`);
    if (item.state === "DISMISSED") return result("dismissed", "the review was dismissed");
    if (!body) return result("empty", "no text (a review whose comments stand on their own)");
    if (seen.has(key)) return result("duplicate", "the same author wrote the same text earlier");
    seen.add(key);
    if (item.author === prAuthor)
      return result(
        PROGRESS.test(body) ? "progress_only" : "author",
        PROGRESS.test(body) ? "a progress note by the author" : "the author's own comment states no requirement",
      );
    if (item.state === "APPROVED" && (APPROVAL.test(body) || !REQUIREMENT.test(body))) return result("approval_only", "an approval that asks for nothing new");
    if (APPROVAL.test(body)) return result("approval_only", "approval wording only");
    if (PROGRESS.test(body) && body.length < 60) return result("progress_only", "a progress or thanks note");
    if (NEEDS_REFERENCE.test(body)) return result("needs_reference", "depends on an intermediate patch or commit the agent never sees");
    if (/```suggestion/.test(body)) return result("suggestion", "a suggestion block: the ask is kept, its code dropped");
    const withoutCode = body.replace(/```[\s\S]*?```/g, "").trim();
    if (/\?\s*$/.test(withoutCode) && !/\b(should|must|please)\b/i.test(withoutCode)) return result("question", "a question, not a requirement");
    if (!REQUIREMENT.test(withoutCode)) return result("no_requirement", "states no requested behaviour");
    return result("substantive", "states requested behaviour");
  });
}
