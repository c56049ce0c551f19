// Writes the reference encodings the tokenizer golden tests compare against, one JSON line per
// model and text: {model, text, ids, prompt_ids, decoded}. ids: encode without special tokens;
// prompt_ids: with them (the post-processor); decoded: decode(ids) skipping special tokens.
// The model folders (variants written here) are those of reference_tokenizers.mjs's modelDir.
// Usage: node goldens.mjs REFERENCE_DIR QUESTION_JSONL HARD_TEXTS_JSON OUT_JSONL
import fs from "node:fs";
import { MODELS, VARIANTS, firstTurns, loadTokenizer, writeVariants } from "./reference_tokenizers.mjs";

const [referenceDir, questionFile, hardTextFile, outFile] = process.argv.slice(2);
const texts = [...firstTurns(questionFile), ...JSON.parse(fs.readFileSync(hardTextFile, "utf8"))];
writeVariants(referenceDir);
const models = [...MODELS, ...Object.keys(VARIANTS)];
const lines = [];
for (const model of models) {
  const tokenizer = await loadTokenizer(referenceDir, model);
  for (const text of texts) {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const prompt_ids = tokenizer.encode(text).ids;
    const decoded = ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : "";
    lines.push(JSON.stringify({ model, text, ids, prompt_ids, decoded }));
  }
}
fs.writeFileSync(outFile, lines.join("\n") + "\n");
console.log(`${lines.length} reference encodings (${models.length} tokenizers x ${texts.length} texts)`);
