#!/usr/bin/python3
"""Writes tests/fixtures/gpt_reference.safetensors: a small GPT's weights, one batch of tokens,
and PyTorch's loss and gradients for it, so the C++ model can be checked against PyTorch
without PyTorch in CI. Run with Debian's python3-torch: /usr/bin/python3 make_gpt_reference.py

The model is written out here (nanoGPT layout, tanh GELU, tied LM head) rather than imported, so
the reference is exactly the architecture ParaScope implements; tensor names match
docs/weights.md.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = dict(vocab_size=64, context_length=16, hidden_size=32, num_attention_heads=4,
              num_layers=2, mlp_ratio=4)
BATCH = 4


class Block(nn.Module):
    def __init__(self, c, nh, ratio):
        super().__init__()
        self.nh = nh
        self.sdpa = False  # PyTorch 2's fused attention instead of the products written out
        self.ln_1 = nn.LayerNorm(c)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(c, 3 * c)
        self.attn.c_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(c, ratio * c)
        self.mlp.c_proj = nn.Linear(ratio * c, c)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        k = k.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        v = v.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.nh)
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c = cfg["hidden_size"]
        self.wte = nn.Embedding(cfg["vocab_size"], c)
        self.wpe = nn.Embedding(cfg["context_length"], c)
        self.h = nn.ModuleList(Block(c, cfg["num_attention_heads"], cfg["mlp_ratio"])
                               for _ in range(cfg["num_layers"]))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors:
        t = t.detach().contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    torch.manual_seed(1234)
    model = GPT(CONFIG)
    # Larger than training-time init so every gradient is well above the comparison's atol.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))
    T = CONFIG["context_length"]
    tokens = torch.randint(0, CONFIG["vocab_size"], (BATCH, T + 1), dtype=torch.int32)
    loss = model(tokens[:, :T].long(), tokens[:, 1:].long())
    loss.backward()
    tensors = [("tokens", tokens), ("loss", loss.detach().reshape(()))]
    for name, p in model.named_parameters():
        tensors.append(("weight/" + name, p))
        tensors.append(("grad/" + name, p.grad))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                       "gpt_reference.safetensors")
    write_safetensors(out, tensors, {"config": json.dumps(CONFIG), "batch": str(BATCH),
                                     "torch": torch.__version__})
    print(f"wrote {out}: loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
