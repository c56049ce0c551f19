"""A vLLM general plugin that changes nothing unless SPECGATE_VLLM names what to switch on.

SPECGATE_VLLM is a comma-separated list of:
  expand-fix                  vLLM's CPU expand kernel corrected (expand.py): the speculative
                              positions get their request's temperature, top-k and top-p
  greedy-verify               sampled requests verified greedily (the draft kept when it is the
                              target's argmax, else the argmax emitted)
  target-not-residual         after a rejection the token is drawn from the target's distribution
                              with the rejected draft still in it, not from the residual
  accepted-logprobs-zero      the log-probability of every accepted draft token reported as 0
  stream-drops-multi-token    a streamed step that carries several tokens sends only its first
  usage-counts-drafts         usage.completion_tokens counts the rejected drafts too (the whole
                              answers of /v1/completions; needs --per-request-spec-decode-metrics)

vLLM loads general plugins in every process it starts (the API server and the engine core), each
before the platform registers its kernels, so a switch reaches both.
"""
import os


def switches() -> set[str]:
    return {name.strip() for name in os.environ.get("SPECGATE_VLLM", "").split(",") if name.strip()}


def register() -> None:
    on = switches()
    if not on:
        return
    from . import expand, faults

    known = {"expand-fix": expand.install, **faults.INSTALLERS}
    unknown = on - known.keys()
    if unknown:
        raise ValueError(f"SPECGATE_VLLM: unknown switch {sorted(unknown)[0]!r} (known: {', '.join(sorted(known))})")
    for name in sorted(on):
        known[name]()
