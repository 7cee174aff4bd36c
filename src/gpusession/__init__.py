"""gpusession: the companion for a rented GPU session.

The package is split in three layers (design.md §Layers):

* ``gpusession.core`` -- pure logic and persistence; imports neither textual nor torch.
* ``gpusession.bench`` -- the run engine; torch is imported only in worker processes.
* ``gpusession.ui`` -- the Textual app; talks to core, and to bench through a runner.
"""

__version__ = "0.1.0"
