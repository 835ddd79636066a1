"""Inside the kernel: tiled attention with an online softmax, and cached decoding."""
