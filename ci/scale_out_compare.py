"""Compares the verdicts ci/scale-out.sh computed through each reference engine with those computed
from the checkpoint, and sums what the remote re-scoring cost per 1,000 answer tokens.

usage: scale_out_compare.py OUT WORK ENGINE...   (reads OUT/*-checkpoint.json, OUT/*-ENGINE.json and
OUT/*-ENGINE.cost.txt; writes OUT/comparison.json and OUT/cost.json)"""
import json
import re
import sys

TOLERANCE = 1e-4
COST = re.compile(r"(\d+) requests \((\d+) retries, (\d+) replies from the cache\), (\d+) positions scored, "
                  r"(\d+) reply bytes, ([0-9.]+) s waiting")


def load(path):
    with open(path) as f:
        return json.load(f)


def answer_tokens(path):
    with open(path) as f:
        return sum(len(turn) for line in f if line.strip() for turn in json.loads(line)["choices"][0]["token_ids"])


def close(a, b):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TOLERANCE


def compare_score(local, remote):
    pairs = [(a["first_divergence"], b["first_divergence"]) for a, b in zip(local["items"], remote["items"])
             if a["first_divergence"]]
    same_kind = sum(a["attribution"] == b["attribution"] for a, b in pairs)
    same_margin = sum(all(close(a[k], b[k]) for k in ("margin", "reference_logprob", "candidate_logprob")) for a, b in pairs)
    worst = max((abs(a[k] - b[k]) for a, b in pairs for k in ("reference_logprob", "candidate_logprob")
                 if a[k] is not None and b[k] is not None), default=0.0)
    kinds = {}
    for a, _ in pairs:
        kinds[a["attribution"]] = kinds.get(a["attribution"], 0) + 1
    return {"divergences": len(pairs), "attributions": kinds, "same_attribution": same_kind,
            "same_logprobs_within_1e-4": same_margin, "largest_logprob_difference": worst,
            "agree": same_kind == same_margin == len(pairs)}


def compare_sampling(local, remote):
    a, b = local["answers"], remote["answers"]
    beyond = len(b["beyond_top_k"])
    result = {"tokens": a["tokens"], "beyond_top_k": beyond, "tested": b["tokens"] - beyond,
              "verdict": [local["verdict"], remote["verdict"]],
              "D": [a["uniformity"]["distance"], b["uniformity"]["distance"]],
              "p": [a["uniformity"]["p_value"], b["uniformity"]["p_value"]],
              "outside_support": [len(a["outside_support"]), len(b["outside_support"])],
              "boundary": [len(a["boundary"]), len(b["boundary"])]}
    if beyond == 0:
        result["agree"] = (local["verdict"] == remote["verdict"] and close(*result["D"]) and close(*result["p"])
                           and result["outside_support"][0] == result["outside_support"][1]
                           and result["boundary"][0] == result["boundary"][1])
    return result


def compare_acceptance(local, remote):
    keys = ("rejected", "rounds")
    same = all(local[k] == remote[k] for k in keys) and local["test"] == remote["test"] and \
        local["mismatches"] == remote["mismatches"]
    return {"rounds": local["rounds"], "rejected": [local["rejected"], remote["rejected"]],
            "observed": [local["test"]["observed"], remote["test"]["observed"]],
            "expected": [local["test"]["expected"], remote["test"]["expected"]], "agree": same}


def main():
    out, work, engines = sys.argv[1], sys.argv[2], sys.argv[3:]
    tokens = {"score": answer_tokens(f"{work}/faulty.jsonl"), "sampling-topk": answer_tokens(f"{work}/topk.jsonl"),
              "sampling-topp": answer_tokens(f"{work}/topp.jsonl"), "acceptance": answer_tokens(f"{work}/greedy.jsonl")}
    comparison, cost = {}, {}
    for engine in engines:
        comparison[engine] = {
            "score": compare_score(load(f"{out}/score-checkpoint.json"), load(f"{out}/score-{engine}.json")),
            "sampling-topk": compare_sampling(load(f"{out}/sampling-topk-checkpoint.json"),
                                              load(f"{out}/sampling-topk-{engine}.json")),
            "sampling-topp": compare_sampling(load(f"{out}/sampling-topp-checkpoint.json"),
                                              load(f"{out}/sampling-topp-{engine}.json")),
            "acceptance": compare_acceptance(load(f"{out}/acceptance-checkpoint.json"),
                                             load(f"{out}/acceptance-{engine}.json")),
        }
        cost[engine] = {}
        for verdict, answered in tokens.items():
            with open(f"{out}/{verdict}-{engine}.cost.txt") as f:
                lines = [COST.search(line) for line in f]
            found = [m for m in lines if m]
            requests, _, _, positions, size, seconds = (sum(float(m.group(i)) for m in found) for i in range(1, 7))
            per = 1000.0 / answered
            cost[engine][verdict] = {"answer_tokens": answered, "requests": int(requests), "positions_scored": int(positions),
                                     "reply_bytes": int(size), "seconds": seconds,
                                     "per_1000_answer_tokens": {"requests": requests * per, "reply_bytes": size * per,
                                                                "seconds": seconds * per}}
    with open(f"{out}/comparison.json", "w") as f:
        json.dump(comparison, f, indent=2)
    with open(f"{out}/cost.json", "w") as f:
        json.dump(cost, f, indent=2)
    print(json.dumps(comparison, indent=2))
    print(json.dumps(cost, indent=2))


main()
