#pragma once

#include <rapidcheck.h>

#include "property_tests/properties/decode_case.h"

namespace specgate::gen {

// What a property needs of its cases.
struct CaseShape {
  bool greedy_only = false;    // no sampling cases
  bool scripted_only = false;  // the drafts follow an acceptance script
  bool exspec_only = false;    // EXSPEC cases only
  bool isolation = false;      // new prompts for every row but the watched one
  bool free_drafts = false;    // a model drafts freely, as sampling needs, whether the case samples or not
  bool tree = false;           // a tree decoder: greedy, scripted, EQSPEC's layout, a generated tree
};

// Tiny float64 targets: 1-3 layers, GQA ratios 1, 2 and 4, QK-norm on or off, head sizes 2-8,
// hidden 8 or 16, vocabularies of 32-64, Mistral with a sliding window. Shrinks toward one
// layer, one head and the smallest sizes.
rc::Gen<props::ModelSpec> tiny_target();

// Decoding cases: 1-16 rows with prompts of 1-48 tokens (sometimes all of one length), K 1-8,
// 1-64 new tokens, acceptance scripts per row per round (all-accept, random, all-reject,
// alternating, one row that always rejects), ragged drafts (scripted lengths per row per
// round: full, all empty, one row full, random; or n-gram lookup), an EOS at a random step, EQSPEC or EXSPEC (B, W,
// aging), greedy or sampling. Batch size, prompt lengths and new tokens grow with RapidCheck's
// size; every part shrinks toward one row, short prompts, K = 1, few new tokens and every
// draft accepted (few rounds). Tree cases draft a generated tree of up to 12 nodes (chains,
// stars, one node, wide levels and all between), K its depth, which shrinks toward one node.
rc::Gen<props::DecodeCase> decode_case(CaseShape shape);

}  // namespace specgate::gen
