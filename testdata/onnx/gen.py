#!/usr/bin/env python3
"""Generates tiny BERT-shaped ONNX models and reference outputs for evpack's tests.

No model weights can be downloaded where evpack is built, so the ONNX code is tested on models made here:
the same inputs and outputs as a real BERT-family export (input_ids, attention_mask, token_type_ids ->
last_hidden_state; a cross-encoder adds logits), the real 30,522-token uncased vocabulary, random weights
(numpy seed 0). The reference outputs are computed independently in numpy.

Run from the repository root:  /usr/bin/python3 testdata/onnx/gen.py ../shared/models/bert-uncased-vocab.txt
Needs Debian's python3-onnx and python3-numpy.
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H, TYPES, POS = 8, 2, 64
vocab = [line.rstrip("\n") for line in open(sys.argv[1], encoding="utf-8")]
V = len(vocab)
rng = np.random.RandomState(0)
w_word = (rng.randn(V, H) * 0.5).astype(np.float32)
w_type = (rng.randn(TYPES, H) * 0.5).astype(np.float32)
w_pos = (rng.randn(POS, H) * 0.5).astype(np.float32)
w1 = (rng.randn(H, H) * 0.5).astype(np.float32)
b1 = (rng.randn(H) * 0.1).astype(np.float32)
wc = (rng.randn(H, 1) * 0.5).astype(np.float32)
bc = (rng.randn(1) * 0.1).astype(np.float32)


def graph(cross):
    inits = [numpy_helper.from_array(a, n) for a, n in [
        (w_word, "w_word"), (w_type, "w_type"), (w_pos, "w_pos"), (w1, "w1"), (b1, "b1"),
        (np.array([0], dtype=np.int64), "zero"), (np.array([1], dtype=np.int64), "one"),
        (np.array([2], dtype=np.int64), "two")]]
    nodes = [
        helper.make_node("Gather", ["w_word", "input_ids"], ["word"]),
        helper.make_node("Gather", ["w_type", "token_type_ids"], ["typ"]),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Slice", ["shape", "one", "two"], ["seq"]),
        helper.make_node("Slice", ["w_pos", "zero", "seq", "zero"], ["pos"]),
        helper.make_node("Add", ["word", "typ"], ["x0"]),
        helper.make_node("Add", ["x0", "pos"], ["x"]),
        helper.make_node("MatMul", ["x", "w1"], ["xw"]),
        helper.make_node("Add", ["xw", "b1"], ["xb"]),
        helper.make_node("Tanh", ["xb"], ["t"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "two"], ["mask3"]),
        helper.make_node("Mul", ["t", "mask3"], ["last_hidden_state"]),
    ]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])]
    if cross:
        inits += [numpy_helper.from_array(wc, "wc"), numpy_helper.from_array(bc, "bc")]
        nodes += [
            # No attention here, so [CLS] alone would not see the pair: the head
            # reads the mean over the sequence (masked positions are zeros).
            helper.make_node("ReduceMean", ["last_hidden_state"], ["mean"], axes=[1], keepdims=0),
            helper.make_node("MatMul", ["mean", "wc"], ["cw"]),
            helper.make_node("Add", ["cw", "bc"], ["logits"]),
        ]
        outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ["input_ids", "attention_mask", "token_type_ids"]]
    g = helper.make_graph(nodes, "tiny-bert-cross-encoder" if cross else "tiny-bert", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="evpack testdata/onnx/gen.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def forward(ids, types, mask):
    x = w_word[ids] + w_type[types] + w_pos[: ids.shape[1]][None, :, :]
    h = np.tanh(x @ w1 + b1) * mask[:, :, None].astype(np.float32)
    return h


ids_of = {tok: i for i, tok in enumerate(vocab)}


def encode(tokens_a, tokens_b=None, length=None):
    toks = ["[CLS]"] + tokens_a + ["[SEP]"]
    types = [0] * len(toks)
    if tokens_b is not None:
        toks += tokens_b + ["[SEP]"]
        types += [1] * (len(tokens_b) + 1)
    ids = [ids_of[t] for t in toks]
    mask = [1] * len(ids)
    while length and len(ids) < length:
        ids.append(ids_of["[PAD]"]); types.append(0); mask.append(0)
    return ids, types, mask


def batch(rows):
    return [np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)]


# Inputs from the real vocabulary (BERT README's tokenization of "John Johanson's house").
emb_rows = [encode("john johan ##son ' s house".split(), length=9), encode("capital buffer".split(), length=9)]
ids, types, mask = batch(emb_rows)
h = forward(ids, types, mask)
pooled = (h * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
normalized = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

ce_rows = [encode("capital buffer".split(), "the buffer must exceed four percent".split(), length=12),
           encode("capital buffer".split(), "john johan ##son ' s house".split(), length=12)]
cids, ctypes, cmask = batch(ce_rows)
logits = (forward(cids, ctypes, cmask).mean(axis=1) @ wc + bc)[:, 0]

onnx.save(graph(False), "testdata/onnx/tiny-bert.onnx")
onnx.save(graph(True), "testdata/onnx/tiny-bert-cross-encoder.onnx")
with open("testdata/onnx/reference.json", "w") as f:
    json.dump({
        "embedder": {"input_ids": ids.tolist(), "token_type_ids": types.tolist(), "attention_mask": mask.tolist(),
                     "last_hidden_state": h.astype(float).tolist(), "mean_pooled_normalized": normalized.astype(float).tolist()},
        "cross_encoder": {"input_ids": cids.tolist(), "token_type_ids": ctypes.tolist(), "attention_mask": cmask.tolist(),
                          "logits": logits.astype(float).tolist()},
    }, f, indent=1)
print("wrote testdata/onnx/tiny-bert.onnx, tiny-bert-cross-encoder.onnx, reference.json")
