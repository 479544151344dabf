# SPDX-License-Identifier: Apache-2.0
"""emha's weight exporter: one attention layer of a PyTorch checkpoint -> emha's weight blob and/or
C++ header (the command: ../emha_export.py, cli.py). Modules, each importing only those above it:
  errors      ExportError (fail) and the wording helpers
  hf          checkpoints as users have them (folders, safetensors, torch.load), config.json
  int8        int8 weights (--weights int8): quantization, a checkpoint's own int8
  checkpoint  the checkpoint's tensors by name, each checked as it is read
  families    the naming families: where each layout keeps Q, K, V and O
  features    the layer features beyond the projections (positions, norms, masks, tables)
  layer       the layer's dims, norm and build_layer: the Config values and tensors
  reference   the exported layer's forward in float64 (the reference rows)
  write       the weight blob and the C++ header of the float and int8-weight layers
  s8, s16x8   the full-integer layers (--quantize int8, --quantize 16x8)
  cli         the command's flags and main
"""
