"""What the expand defect of vLLM's CPU build depends on: the table ci/vllm-check.sh writes as
dependence.md, from its dependence phase (DIR/NAME.collect.txt, the sampled answers of one
setting, and DIR/NAME.sampling.json, their one-sample report; DIR/commands.txt, the settings).

    python peers/vllm/dependence_table.py reports/vllm/dependence > reports/vllm/dependence.md
"""
import glob
import json
import os
import re
import shlex
import sys


def describe(sampling):
    shaping = [f"T {sampling['temperature']:g}"]
    if sampling.get("top_k"):
        shaping.append(f"top-k {sampling['top_k']}")
    if sampling.get("top_p", 1) < 1:
        shaping.append(f"top-p {sampling['top_p']:g}")
    if sampling.get("min_p"):
        shaping.append(f"min-p {sampling['min_p']:g}")
    return ", ".join(shaping)


def asked(commands, name):
    """The sampling flags of the collect command that wrote NAME.jsonl."""
    for line in commands:
        words = shlex.split(line)
        if "collect" in words and any(w.endswith(f"/{name}.jsonl") for w in words):
            flags = dict(zip(words, words[1:]))
            return {"temperature": float(flags.get("--temperature", 1)), "top_k": int(flags.get("--top-k", 0)),
                    "top_p": float(flags.get("--top-p", 1)), "min_p": float(flags.get("--min-p", 0))}
    return None


def failure(log):
    """collect's exit code and its last error line, or None when it exited 0."""
    lines = open(log).read().splitlines()
    status = lines[-1].split()[-1] if lines and lines[-1].startswith("exit ") else "?"
    if status == "0":
        return None
    errors = [line for line in lines if re.search(r"error|refused|died|500", line, re.I)]
    return status, (errors[-1] if errors else lines[-2] if len(lines) > 1 else "")


def main():
    folder = sys.argv[1]
    commands = open(os.path.join(folder, "commands.txt")).read().splitlines()
    print("# What the defect depends on\n")
    print("vLLM 0.32's CPU build as installed (`fixed` rows: its expand kernel corrected, SPECGATE_VLLM=expand-fix), "
          "float32, serving the real model: Spec-Bench first turns, several samples a question (a seed each), 64 "
          "tokens; 8 requests in flight unless marked alone. Each row's answers judged by the one-sample verdict "
          "against the target (`sampling --engine-dtype float32`). Written by peers/vllm/dependence_table.py from "
          "ci/vllm-check.sh's dependence phase; the commands are in dependence/commands.txt.\n")
    print("| run | drafter, K | sampling | answers | tokens | outside the support | share | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for log in sorted(glob.glob(os.path.join(folder, "*.collect.txt"))):
        name = os.path.basename(log)[: -len(".collect.txt")]
        drafter = "draft model, 4" if name.startswith("draft") else ("n-gram, 2" if "-k2-" in name else "n-gram, 4")
        if "-fixed-" in name:
            drafter += ", corrected"
        alone = " (alone)" if name.endswith("-alone") else ""
        report_path = os.path.join(folder, name + ".sampling.json")
        failed = failure(log)
        if failed or not os.path.exists(report_path):
            status, line = failed or ("?", "no one-sample report")
            sampling = asked(commands, name)
            setting = describe(sampling) if sampling else "?"
            print(f"| {name} | {drafter} | {setting}{alone} | – | – | – | – | collect exit {status}: "
                  f"{line.strip().replace('|', '/')[:160]} |")
            continue
        report = json.load(open(report_path))
        answers = report["answers"]
        outside = len(answers["outside_support"])
        print(f"| {name} | {drafter} | {describe(report['sampling'])}{alone} | {answers['answers']} | {answers['tokens']} | "
              f"{outside} | {outside / answers['tokens']:.1%} | {report['verdict']} |")


if __name__ == "__main__":
    main()
