/**
 * Glob matching for profile overrides: `*` within a segment, `**` across segments, `?` one
 * character, `{a,b}` alternatives. Small on purpose: profiles need nothing more, and the rules
 * must read the same to a maintainer as to the code.
 */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        out += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else out += "[^/]*";
    } else if (ch === "?") out += "[^/]";
    else if (ch === "{") {
      const close = glob.indexOf("}", i);
      if (close < 0) throw new Error(`unclosed '{' in glob ${JSON.stringify(glob)}`);
      out += "(?:" + glob.slice(i + 1, close).split(",").map(escapeRegExp).join("|") + ")";
      i = close;
    } else out += escapeRegExp(ch);
  }
  return new RegExp(`^${out}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+^${}()|[\]\\]/g, "\\$&");
}

export function matchesGlob(path: string, glob: string): boolean {
  return globToRegExp(glob).test(path);
}
