"""What the expand defect of vLLM's CPU build depends on: the table ci/vllm-check.sh writes as
dependence.md, from the one-sample reports of its dependence phase (DIR/NAME.sampling.json, each
of the installed servers' sampled answers under one setting).

    python peers/vllm/dependence_table.py reports/vllm/dependence > reports/vllm/dependence.md
"""
import glob
import json
import os
import sys


def describe(sampling):
    shaping = [f"T {sampling['temperature']:g}"]
    if sampling["top_k"]:
        shaping.append(f"top-k {sampling['top_k']}")
    if sampling["top_p"] < 1:
        shaping.append(f"top-p {sampling['top_p']:g}")
    if sampling["min_p"]:
        shaping.append(f"min-p {sampling['min_p']:g}")
    return ", ".join(shaping)


def main():
    folder = sys.argv[1]
    print("# What the defect depends on\n")
    print("vLLM 0.32's CPU build as installed, float32, serving the real model: Spec-Bench first turns, several "
          "samples a question (a seed each), 64 tokens; 8 requests in flight unless marked alone. Each row's answers "
          "judged by the one-sample verdict against the target (`sampling --engine-dtype float32`). Written by "
          "peers/vllm/dependence_table.py from ci/vllm-check.sh's dependence phase; the commands are in "
          "dependence/commands.txt.\n")
    print("| run | drafter, K | sampling | answers | tokens | outside the support | share | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for path in sorted(glob.glob(os.path.join(folder, "*.sampling.json"))):
        name = os.path.basename(path)[: -len(".sampling.json")]
        report = json.load(open(path))
        answers = report["answers"]
        drafter = "draft model, 4" if name.startswith("draft") else ("n-gram, 2" if "-k2-" in name else "n-gram, 4")
        alone = " (alone)" if name.endswith("-alone") else ""
        outside = len(answers["outside_support"])
        print(f"| {name} | {drafter} | {describe(report['sampling'])}{alone} | {answers['answers']} | {answers['tokens']} | {outside} | "
              f"{outside / answers['tokens']:.1%} | {report['verdict']} |")


if __name__ == "__main__":
    main()
