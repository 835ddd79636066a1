"""`make messages`: extract every translatable string and merge it into each language's catalogs.

One catalog per feature (`translations/<locale>/LC_MESSAGES/<feature>.po`, from
app/features/<feature>/ and templates/<feature>/) and one for what the features share
(`shared.po`: app/core, app/web, the top-level templates), so that work on two features never
edits the same catalog. The app merges them all when it loads a language (app/core/i18n.py).

After a run, translate every empty msgstr; tests/web/test_i18n.py fails until none is left.
"""

import sys
from collections import defaultdict
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
SHARED = "shared"
PROJECT = "Attention Lab"


def domain_of(path: str) -> str:
    """The catalog a source file's strings go to: its feature's, or the shared one."""
    parts = Path(path).parts
    if parts[:2] == ("app", "features") and len(parts) > 3:
        return parts[2]
    if parts[0] == "templates" and len(parts) > 2:
        return parts[1]
    return SHARED


def extracted() -> dict[str, Catalog]:
    """Every domain's strings, as babel.cfg maps the source files."""
    with (ROOT / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    templates: dict[str, Catalog] = defaultdict(lambda: Catalog(project=PROJECT))
    found = extract_from_dir(ROOT, method_map, options_map, keywords=DEFAULT_KEYWORDS)
    for filename, lineno, message, comments, context in found:
        templates[domain_of(filename)].add(
            message, None, [(filename, lineno)], auto_comments=comments, context=context
        )
    return dict(templates)


def forms(message: Message) -> tuple[str, ...]:
    """A message's translations: one, or one per plural form."""
    string = message.string
    return string if isinstance(string, tuple) else (string,)


def entries(catalog: Catalog) -> list[tuple[object, object]]:
    return sorted((repr(m.id), repr(m.string)) for m in catalog if m.id)


def refresh(locale: str, templates: dict[str, Catalog]) -> None:
    folder = ROOT / "translations" / locale / "LC_MESSAGES"
    old: dict[str, Catalog] = {}
    for path in sorted(folder.glob("*.po")):
        with path.open("rb") as po:
            old[path.stem] = read_po(po, locale=locale)
    known = {m.id: m.string for catalog in old.values() for m in catalog if m.id and any(forms(m))}
    for domain, template in sorted(templates.items()):
        catalog = old.get(domain) or Catalog(locale=locale, project=PROJECT)
        before = entries(catalog)
        catalog.update(template, no_fuzzy_matching=True)
        for message in catalog:  # a string that moved between catalogs keeps its translation
            if message.id and not any(forms(message)) and message.id in known:
                message.string = known[message.id]
        catalog.obsolete.clear()
        if domain in old and entries(catalog) == before:
            continue  # unchanged: its file (and the date in its header) stays as it is
        with (folder / f"{domain}.po").open("wb") as po:
            write_po(po, catalog, omit_header=False, sort_output=True, no_location=True)
    for stale in set(old) - set(templates):
        (folder / f"{stale}.po").unlink()


def main() -> None:
    templates = extracted()
    locales = [p.name for p in (ROOT / "translations").iterdir() if (p / "LC_MESSAGES").is_dir()]
    for locale in sys.argv[1:] or locales:
        refresh(locale, templates)


if __name__ == "__main__":
    main()
