#!/usr/bin/env python3
"""Writes peers.md, peers.json and peers.svg from ci/peer-speed.sh's answer files.

A run is one server at one concurrency in one round: its tokens/s are the new tokens of its
answers over its wall time (the last answer's tstamp less run.started_at), its latencies each
request's wall time. Each server's ratio to vLLM (speculation off) is taken within a round, so
that the machine's drift between rounds cancels; figures are medians over the rounds with their
range.
"""
import json
import statistics
import sys
from pathlib import Path

LABELS = {
    "specgate": "specgate serve, nonspec-batch",
    "specgate-eqspec-ngram": "specgate serve, EQSPEC + n-gram",
    "specgate-exspec-ngram": "specgate serve, EXSPEC + n-gram",
    "vllm": "vLLM CPU, speculation off",
    "vllm-ngram": "vLLM CPU, n-gram",
    "llamacpp": "llama.cpp llama-server",
    "llamacpp-own-buffer": "llama.cpp llama-server --load-mode none",
}
COLOURS = ["#1f77b4", "#2ca02c", "#17becf", "#d62728", "#ff7f0e", "#9467bd", "#8c564b"]


def run_figures(path):
    answers = [json.loads(line) for line in open(path)]
    started = min(a["run"]["started_at"] for a in answers)
    ended = max(a["tstamp"] for a in answers)
    tokens = sum(sum(a["choices"][0]["new_tokens"]) for a in answers)
    latencies = sorted(t for a in answers for t in a["choices"][0]["wall_time"])
    return {"tokens": tokens, "seconds": ended - started, "tokens_per_second": tokens / (ended - started),
            "latency_p50": percentile(latencies, 0.5), "latency_p90": percentile(latencies, 0.9)}


def percentile(values, q):
    position = q * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def spread(values, digits=1, suffix=""):
    if not values:
        return "-"
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.{digits}f}{suffix}"
    return f"{middle:.{digits}f}{suffix} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def exactness(out, engine):
    path = out / f"score_{engine}.json"
    if not path.exists():
        return "-"
    summary = json.load(open(path))["summary"]
    divergences = summary["divergences"]
    text = f"{summary['exact']} of {summary['compared']}"
    if summary["exact"] < summary["compared"]:
        text += f" ({divergences['near_tie']} near-tie, {divergences['hard']} hard)"
    return text


def svg(table, engines, concurrencies):
    width, height, left, bottom, top, right = 640, 380, 60, 50, 20, 220
    peak = max(max(r["tokens_per_second"]) for r in table.values()) * 1.1
    x = lambda i: left + (width - left - right) * (i / max(1, len(concurrencies) - 1))
    y = lambda v: top + (height - top - bottom) * (1 - v / peak)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<line x1="{left}" y1="{y(0)}" x2="{width - right}" y2="{y(0)}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{y(0)}" stroke="black"/>',
             f'<text x="{(left + width - right) / 2}" y="{height - 12}" text-anchor="middle">requests in flight</text>',
             f'<text transform="translate(16 {(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">'
             'tokens/s (median over rounds)</text>']
    for step in range(6):
        value = peak * step / 5
        parts.append(f'<text x="{left - 6}" y="{y(value) + 4}" text-anchor="end">{value:.0f}</text>')
    for i, c in enumerate(concurrencies):
        parts.append(f'<text x="{x(i)}" y="{y(0) + 18}" text-anchor="middle">{c}</text>')
    for n, engine in enumerate(engines):
        colour = COLOURS[n % len(COLOURS)]
        points = [(x(i), y(statistics.median(table[(engine, c)]["tokens_per_second"])))
                  for i, c in enumerate(concurrencies) if (engine, c) in table]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py in points) + '"/>')
        parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points]
        ly = top + 18 * n + 10
        parts += [f'<line x1="{width - right + 12}" y1="{ly}" x2="{width - right + 32}" y2="{ly}" stroke="{colour}" '
                  'stroke-width="2"/>', f'<text x="{width - right + 38}" y="{ly + 4}">{LABELS[engine]}</text>']
    return "\n".join(parts + ["</svg>"]) + "\n"


def main():
    work, out = Path(sys.argv[1]), Path(sys.argv[2])
    engines, concurrencies, rounds, command = sys.argv[3].split(), sys.argv[4].split(), int(sys.argv[5]), sys.argv[6]
    runs = {(e, c, r): run_figures(work / f"{e}-c{c}-r{r}.jsonl")
            for e in engines for c in concurrencies for r in range(1, rounds + 1)}
    table = {}
    for e in engines:
        for c in concurrencies:
            rows = [runs[(e, c, r)] for r in range(1, rounds + 1)]
            entry = {key: [row[key] for row in rows] for key in rows[0]}
            if "vllm" in engines:
                entry["ratio_to_vllm"] = [runs[(e, c, r)]["tokens_per_second"] / runs[("vllm", c, r)]["tokens_per_second"]
                                          for r in range(1, rounds + 1)]
            table[(e, c)] = entry
    versions = (out / "versions.txt").read_text().strip().splitlines()
    lines = ["# Serving speed against vLLM and llama.cpp, same weights, same cores", "",
             f"`{command}`; " + "; ".join(versions) + ".", "",
             "Each server alone on the cores while measured (started, warmed with one request, stopped after), the "
             "rounds interleaved; greedy, float32, Spec-Bench first turns (smollm2-templated ids), each concurrency "
             "its own questions, which no server has seen before in that round (none answers from a prompt cache). "
             "tokens/s: a run's "
             "new tokens over its wall time; the ratio to vLLM is taken within each round. Median over the rounds "
             "[range]; latency is a request's wall time in seconds.", ""]
    for c in concurrencies:
        lines += [f"## {c} request{'s' if c != '1' else ''} in flight", "",
                  "| server | tokens/s | x vLLM (off) | latency p50 (s) | latency p90 (s) |",
                  "|---|---:|---:|---:|---:|"]
        for e in engines:
            entry = table[(e, c)]
            lines.append(f"| {LABELS[e]} | {spread(entry['tokens_per_second'])} | "
                         f"{spread(entry.get('ratio_to_vllm', []), 2, 'x')} | {spread(entry['latency_p50'], 2)} | "
                         f"{spread(entry['latency_p90'], 2)} |")
        lines.append("")
    lines += ["## Exactness", "", f"Round 1 at {concurrencies[0]} in flight, scored against specgate's oracle "
              "(`conformance score --rescore-with`): answers equal to the oracle's.", "",
              "| server | equal answers |", "|---|---:|"]
    lines += [f"| {LABELS[e]} | {exactness(out, e)} |" for e in engines]
    if "vllm" in engines:
        lines += ["", "## Goal: specgate's serve at least vLLM CPU's throughput at every concurrency", ""]
        for e in (e for e in engines if e.startswith("specgate")):
            ratios = {c: statistics.median(table[(e, c)]["ratio_to_vllm"]) for c in concurrencies}
            met = all(r >= 1.0 for r in ratios.values())
            lines.append(f"- {LABELS[e]}: " + ", ".join(f"{r:.2f}x at {c}" for c, r in ratios.items())
                         + (" (met)" if met else " (not met)"))
    (out / "peers.md").write_text("\n".join(lines) + "\n")
    (out / "peers.json").write_text(json.dumps(
        {"command": command, "versions": versions,
         "runs": [{"engine": e, "concurrency": int(c), "round": r, **figures} for (e, c, r), figures in runs.items()]},
        indent=2) + "\n")
    (out / "peers.svg").write_text(svg(table, engines, concurrencies))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
