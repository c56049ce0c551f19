// Checks `conformance tokenize` output against tokenizers.js on the same real tokenizer files:
// every prompt's ids must be what tokenizers.js encodes its text to, special-token strings
// included, with the tokenizer's own specials added unless the template writes its BOS itself.
// usage: node check_prompt_ids.mjs REFERENCE_DIR MODEL TOKENIZE_OUTPUT.jsonl
import fs from "node:fs";
import { loadTokenizer } from "../../ci/tokenizer-reference/reference_tokenizers.mjs";

const [referenceDir, model, output] = process.argv.slice(2);
const tokenizer = await loadTokenizer(referenceDir, model);
const lines = fs.readFileSync(output, "utf8").split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
let differ = 0;
for (const line of lines) {
  const addSpecials = !["llama2", "llama3"].includes(line.chat_template);
  const expected = tokenizer.encode(line.prompt, { add_special_tokens: addSpecials }).ids;
  if (JSON.stringify(expected) === JSON.stringify(line.token_ids)) continue;
  if (differ++ === 0) console.log(`${model} ${line.chat_template} question ${line.question_id}:\n  ours:      ${JSON.stringify(line.token_ids)}\n  reference: ${JSON.stringify(expected)}`);
}
console.log(`${model} ${lines[0]?.chat_template}: ${lines.length - differ} of ${lines.length} prompts agree`);
process.exit(lines.length > 0 && differ === 0 ? 0 : 1);
