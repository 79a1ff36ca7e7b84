// Child process for the kill test: rewrites one artifact forever, alternating two large contents.
import { writeFileAtomic } from "../../pipeline/atomic.ts";

const [path] = process.argv.slice(2);
const contents = ["A", "B"].map((letter) => Array.from({ length: 20000 }, (_, i) => `{"id":"${letter}${i}","pad":"${letter.repeat(200)}"}\n`).join(""));
let round = 0;
process.stdout.write("ready\n");
for (;;) {
  await writeFileAtomic(path!, contents[round++ % 2]!);
  process.stdout.write("wrote\n");
}
