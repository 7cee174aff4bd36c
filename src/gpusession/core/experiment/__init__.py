"""An experiment and its schedule, pure: what is varied and fixed, the run keys, the placeholders of a command and the workloads' required params.

Reading and writing experiments in a session folder is :mod:`gpusession.core.folder.experiments`.
"""
