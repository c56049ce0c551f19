"""Which verdict caught which seeded fault in vLLM: the table ci/vllm-check.sh writes as faults.md.

Reads each command's log under REPORTS (its last line, "exit N", is the command's exit code: 1 a
verdict against the server, 0 none; collect exits 2 on a response no answer can have, naming it) for the installed vLLM (float32/), the corrected copy (fixed/)
and each fault seeded into the corrected copy (faults/FAULT/).

    python peers/vllm/fault_table.py reports/vllm > reports/vllm/faults.md
"""
import json
import os
import sys

VERDICTS = [
    ("collect (sampled)", "ngram-sampled.collect"),
    ("one sample", "ngram-sampled.sampling"),
    ("two samples", "ngram-sampled.two-sample"),
    ("acceptance", "ngram-sampled.acceptance"),
    ("differential", "ngram-differential"),
    ("differential --stream", "ngram-differential-stream"),
]


def outcome(folder, name):
    log = os.path.join(folder, name + ".txt")
    if not os.path.exists(log):
        return "not run"
    lines = open(log).read().splitlines()
    status = lines[-1].split()[-1] if lines and lines[-1].startswith("exit ") else "?"
    if name.endswith(".collect"):
        return {"0": "passed", "2": "**refused**"}.get(status, f"exit {status}")
    return {"0": "passed", "1": "**caught**"}.get(status, f"exit {status}")


def tokens(folder):
    path = os.path.join(folder, "ngram-sampled.jsonl")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return str(sum(len(t) for line in f if line.strip() for t in json.loads(line)["choices"][0]["token_ids"]))


def sampled_tokens(folder):
    """Each sampled answer's tokens by question and seed, or None without answers."""
    path = os.path.join(folder, "ngram-sampled.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        answers = [json.loads(line) for line in f if line.strip()]
    return {(a["question_id"], a["run"].get("sampling", {}).get("seed")): a["choices"][0]["token_ids"] for a in answers}


def main():
    reports = sys.argv[1]
    rows = [("none: vLLM 0.32 as installed (the expand defect)", os.path.join(reports, "float32")),
            ("none: the corrected copy (expand-fix)", os.path.join(reports, "fixed"))]
    faults = os.path.join(reports, "faults")
    for fault in sorted(os.listdir(faults)) if os.path.isdir(faults) else []:
        if os.path.isdir(os.path.join(faults, fault)):
            rows.append((f"`{fault}`", os.path.join(faults, fault)))
    print("# Seeded faults in vLLM, and the verdicts that catch them\n")
    print("Each fault is switched on in a copy of vLLM 0.32's CPU build whose expand kernel is corrected "
          "(SPECGATE_VLLM=expand-fix,FAULT; peers/vllm/specgate_vllm/faults.py), serving the real model with n-gram "
          "drafts, K = 4, float32. Sampled verdicts on T 0.8, top-p 0.95 answers (the tokens column), against the "
          "speculation-off server's for two samples; differential on greedy answers alone and in one crowd, with "
          "log-probabilities, the target's re-scoring and the speculation-off server, and again streamed. Written by "
          "peers/vllm/fault_table.py from ci/vllm-check.sh's logs.\n")
    print("| fault | sampled tokens | " + " | ".join(v for v, _ in VERDICTS) + " |")
    print("|---|---:|" + "---|" * len(VERDICTS))
    corrected = sampled_tokens(os.path.join(reports, "fixed"))
    same = []
    for label, folder in rows:
        cells = [outcome(folder, name) for _, name in VERDICTS]
        print(f"| {label} | {tokens(folder)} | " + " | ".join(cells) + " |")
        if folder != os.path.join(reports, "fixed") and corrected and sampled_tokens(folder) == corrected:
            same.append(label)
    if same:
        print(f"\nThe sampled answers of {', '.join(same)} are the corrected copy's token for token (the same seeds): "
              "whatever order collect wrote them in, the sampled verdicts give them the corrected copy's figures, "
              "since each answer draws its randomised PIT values from a stream keyed by its question and tokens.")


if __name__ == "__main__":
    main()
