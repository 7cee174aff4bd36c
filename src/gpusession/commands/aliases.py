"""An option's older name, still taken, said once on stderr (``validate --output``).

One way to name a thing (``--predictions`` for the file read, ``--out`` for a file
written); the older spelling keeps scripts working and says the new one, once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


class OlderName(argparse.Action):
    """Store the value as ``store`` does; when typed under an older name, say the new one once.

    The first option string is the name; the others are older names (``--predictions``,
    ``--output``). The note goes to stderr (stdout may be JSON) once per invocation.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[object] | None, option_string: str | None = None) -> None:
        """Store ``values``; say the name to use when ``option_string`` is an older one."""
        name = self.option_strings[0]
        if option_string is not None and option_string != name:
            said: set[str] = getattr(namespace, "_older_names_said", set())
            if option_string not in said:
                said.add(option_string)
                namespace._older_names_said = said
                print(f"note: {option_string} is now {name} (the older name still works)", file=sys.stderr)
        setattr(namespace, self.dest, values)
