"""What scales quadratically: score memory, FLOPs and the KV cache, with model presets."""
