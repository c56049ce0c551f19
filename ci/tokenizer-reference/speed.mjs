// tokenizers.js's speed on the tokenizer benchmark's work: encoding the Spec-Bench first turns
// with the Qwen3 tokenizer, in tokens per second (one warm-up pass, then timed passes).
// Usage: node speed.mjs REFERENCE_DIR QUESTION_JSONL [SECONDS]
import { firstTurns, loadTokenizer } from "./reference_tokenizers.mjs";

const [referenceDir, questionFile, seconds = "3"] = process.argv.slice(2);
const tokenizer = await loadTokenizer(referenceDir, "qwen3");
const texts = firstTurns(questionFile);
const encodeAll = () => texts.reduce((sum, text) => sum + tokenizer.encode(text, { add_special_tokens: false }).ids.length, 0);
encodeAll();
let tokens = 0, passes = 0;
const start = process.hrtime.bigint();
let elapsed = 0;
while (elapsed < Number(seconds)) {
  tokens += encodeAll();
  passes += 1;
  elapsed = Number(process.hrtime.bigint() - start) / 1e9;
}
console.log(`tokenizers.js qwen3: ${texts.length} texts, ${passes} passes, ${(elapsed / passes * 1e3).toFixed(2)} ms/pass, ${Math.round(tokens / elapsed)} tokens/s`);
