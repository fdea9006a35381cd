"""The header of an ECSV file (astropy's Enhanced CSV, as Gaia distributes its tables): the
``# ``-prefixed YAML before the column names, which says the delimiter (a space unless it says
a comma) and each column's declared type; a reader that skipped it would split a
space-delimited file wrongly and guess types the file states."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

MAGIC = "# %ECSV"


@dataclass(frozen=True)
class Ecsv:
    delimiter: str
    datatypes: dict   # column name -> (datatype, subtype or None), as declared


class _Loader(yaml.SafeLoader):
    """Safe YAML that reads astropy's own tags (``!astropy.units.Unit`` in ``meta``) as nothing:
    only the delimiter and the datatypes are used."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def parse(lines: list[str], path) -> Ecsv:
    """The ECSV header of ``lines`` (the file's ``#`` lines, the ``# %ECSV`` one first)."""
    text = "\n".join(ln[2:] if ln.startswith("# ") else ln[1:] for ln in lines[1:])
    try:
        doc = yaml.load(text, Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: its ECSV header is not valid YAML ({str(exc).splitlines()[0]}); "
                         "check the '#' lines before the column names") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: its ECSV header is not a YAML mapping; check the '#' lines before the column names")
    delimiter = doc.get("delimiter", " ")
    if delimiter not in (" ", ","):
        raise ValueError(f"{path}: its ECSV header's delimiter {delimiter!r} is neither a space nor a comma "
                         "(the two ECSV allows)")
    types = {}
    for col in doc.get("datatype") or []:
        if isinstance(col, dict) and "name" in col:
            types[str(col["name"])] = (str(col.get("datatype", "string")), col.get("subtype"))
    return Ecsv(delimiter, types)
