"""What the machine is: host and GPU facts through psutil and NVML (no torch)."""
