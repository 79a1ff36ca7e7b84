/**
 * The endpoint's prompt cache, as a provider's prefix cache behaves: a call's input is served from
 * the cache as far as it repeats, from its start, what an earlier call sent. A harness that resends
 * its conversation with a turn added gets everything before the new turn from the cache; a context
 * manager that drops or rewrites earlier turns (+Router, +RCM at a switch) breaks the prefix there,
 * and everything after the break is input again.
 *
 * A prompt is read as the endpoint counts its tokens (server.ts): the system prompt, then every
 * turn's text in order (a user turn's text, an assistant turn's text and tool calls, a tool
 * result). Calls share a prefix only within one protocol, model and set of tools, as a provider
 * keys its cache by them. Only answered calls are remembered: a call that failed was never
 * processed. The cache lives as long as the endpoint, like a provider account's within its
 * lifetime: a conversation's earlier calls are in it, and so is whatever earlier calls of other
 * conversations sent (another conversation shares at most the text it begins with).
 */
import type { ModelCall, Turn } from "./wire.ts";

/** One piece of a prompt: what kind of text it is, and the text. */
type Piece = readonly [kind: string, text: string];

/** A prefix of pieces sent before, and the pieces that followed it in some earlier call. */
interface Node {
  next: Map<string, { piece: Piece; node: Node }>;
}

const pieceText = (turn: Turn): string => (turn.role === "tool" ? turn.output : turn.role === "user" ? turn.text : turn.text + JSON.stringify(turn.toolCalls));

/** A call's prompt as the endpoint counts it, piece by piece, in the order it was sent. */
export function promptPieces(call: ModelCall): Piece[] {
  return [["system", call.system], ...call.turns.map((turn): Piece => [turn.role, pieceText(turn)])];
}

/** Characters a prompt holds, as the endpoint counts them. */
export const promptChars = (call: ModelCall): number => promptPieces(call).reduce((n, [, text]) => n + text.length, 0);

const keyOf = ([kind, text]: Piece) => `${kind}\u0000${text}`;

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

export class PromptCache {
  /** Per protocol, model and tools: every answered prompt, as a tree of its pieces. */
  private readonly roots = new Map<string, Node>();

  private root(call: ModelCall): Node {
    const scope = JSON.stringify([call.protocol, call.model, call.tools]);
    let root = this.roots.get(scope);
    if (!root) this.roots.set(scope, (root = { next: new Map() }));
    return root;
  }

  /**
   * Characters at the start of `call`'s prompt that an earlier answered call sent too: every piece
   * an earlier prompt began with, then as much of the first differing piece as one of them had.
   */
  sharedChars(call: ModelCall): number {
    let node = this.root(call);
    let shared = 0;
    for (const piece of promptPieces(call)) {
      const same = node.next.get(keyOf(piece));
      if (same) {
        shared += piece[1].length;
        node = same.node;
        continue;
      }
      let longest = 0;
      for (const { piece: earlier } of node.next.values()) if (earlier[0] === piece[0]) longest = Math.max(longest, commonPrefix(earlier[1], piece[1]));
      return shared + longest;
    }
    return shared;
  }

  /** Keeps an answered call's prompt for the calls after it. */
  remember(call: ModelCall): void {
    let node = this.root(call);
    for (const piece of promptPieces(call)) {
      const key = keyOf(piece);
      let entry = node.next.get(key);
      if (!entry) node.next.set(key, (entry = { piece, node: { next: new Map() } }));
      node = entry.node;
    }
  }
}
