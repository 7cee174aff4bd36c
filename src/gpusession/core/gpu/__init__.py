"""What the machine is, without torch: host and GPU facts through psutil and NVML.

``nvml`` is the one module that opens NVML; ``host`` reads psutil (RAM, swap, the
cgroup limit, CPU); ``devices`` says which physical GPU a torch device is;
``environment`` the concurrent load an experiment starts under.
"""
