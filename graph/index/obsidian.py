"""Obsidian-flavoured markdown → plain markdown for unstructured, plus the note's facts.

Obsidian (and Logseq) notes carry syntax that means something to the app but is noise to a
reader or a retriever: YAML frontmatter, ``[[wikilinks]]``, ``![[embeds]]``, inline
``#tags``, callout markers and ``key:: value`` properties. :func:`prepare_note` turns a
note's text into markdown a reader would write by hand and a :class:`NoteMeta` holding what
the syntax said (title, aliases, tags, dates, links). A note's other properties (``phone:
07700 900412`` in its frontmatter, ``rating:: 4`` in its text) are facts of the note: they
stay in its text as ``key: value`` lines, where the search and the model read them. Code
spans and fenced code blocks are left exactly as written.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import posixpath
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.index.image_files import IMAGE_SUFFIXES

#: Bumped whenever the same note text would be indexed differently; recorded on the
#: collection and on every chunk, so a load re-reads notes indexed by an older parser.
#: 0: no Obsidian handling (collections made before this module); 1: this module; 2: a
#: note's other properties kept as text (1 dropped them). A note without such properties reads
#: the same under 1 and 2 (:func:`parser_for`), so only notes with them are read again.
PARSER_VERSION = 2
#: The first parser that recorded tags and folders, which filtered searches need.
FILTERS_SINCE = 1

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_MAX_TICKS = 8
_LONG_TICKS = re.compile("`" * (_MAX_TICKS + 1))
_HEADING = re.compile(r"^(\s{0,3}#{1,6})(\s+)(.*)$")
_PROPERTY = re.compile(r"^\s*(?:-\s+)?([A-Za-z][\w-]*)::\s?(.*)$")
_CALLOUT = re.compile(r"^(\s*(?:>\s*)+)\[!([\w-]+)\][+-]?\s*(.*)$")
_EMBED = re.compile(r"!\[\[([^\[\]\n]+)\]\]")
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
# Obsidian: a tag follows whitespace (or starts the line) and holds letters, digits, '_',
# '-' and '/', with at least one character that is not a digit.
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
_SIZE = re.compile(r"^\d+(x\d+)?$")
#: A frontmatter line ``parser_for`` can read: ``key: ...`` (plainly or quoted), a list item,
#: a comment or nothing. Lines without a colon are a longer value's.
_METADATA_LINE = re.compile(r"""^\s*(?:(['"]?)([\w -]+?)\1\s*:(?:\s|$)|-(?:\s|$)|#|$)""")
#: Limits on what one note's syntax may claim: a note may come from someone else, and every
#: chunk of a note carries these (its names in each embedded text, its tags as filter keys),
#: so a note listing 100,000 aliases would make every chunk huge. Real notes stay far below.
#: A note over a limit keeps the first ones and is indexed with a warning (only such notes
#: index differently than before these limits, so PARSER_VERSION stays).
MAX_ALIASES = 50
MAX_TAGS = 200
MAX_LINKS = 1000
#: Frontmatter longer than this (UTF-8 bytes) or nesting deeper is ignored with a warning:
#: PyYAML is pure Python here (about 0.4 s for 64 KB) and recursive (a 1 KB frontmatter of
#: 500 nested lists raised RecursionError and stopped the whole load).
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_FRONTMATTER_DEPTH = 32
_DATE_KEYS = {
    "created": ("created", "date", "date created", "creation date"),
    "modified": ("modified", "updated", "last modified", "date modified"),
}
#: Properties that are the note's metadata, not shown as text: its names and tags (recorded
#: in :class:`NoteMeta`), the file's timestamps that plugins write into every note (recorded as
#: dates), and ``cssclasses``, which only styles the note in Obsidian. ``date`` is shown: it is
#: often the day a note is about (a gig, a trip).
METADATA_KEYS = frozenset(
    {"title", "alias", "aliases", "tag", "tags", "cssclass", "cssclasses"}
    | {key for keys in _DATE_KEYS.values() for key in keys if key != "date"}
)


@dataclass
class NoteMeta:
    """What a note's Obsidian syntax said about it."""

    title: str = ""
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    """Normalised: lower case, without '#' (``area/sub`` for ``#area/sub``)."""
    dates: dict[str, str] = field(default_factory=dict)
    """Frontmatter dates (ISO 8601) by key, plus ``created``/``modified`` when known."""
    links: list[str] = field(default_factory=list)
    """Notes this note links to or embeds (link targets, without heading or alias)."""
    properties: list[str] = field(default_factory=list)
    """The note's other properties as text lines (``phone: 07700 900412``): its frontmatter's
    and its ``key:: value`` lines before any text."""
    warnings: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Title and aliases: other names the note is known by."""
        return _unique([self.title, *self.aliases])

    def to_metadata(self) -> dict[str, Any]:
        """Scalar chunk metadata (Chroma takes no lists: lists are JSON text)."""
        metadata: dict[str, Any] = {
            "title": self.title,
            "aliases": json.dumps(self.aliases, ensure_ascii=False),
            "tags": json.dumps(self.tags, ensure_ascii=False),
            "links": json.dumps(self.links, ensure_ascii=False),
            "dates": json.dumps(self.dates, ensure_ascii=False),
            "parser": PARSER_VERSION,
        }
        for key in _DATE_KEYS:
            if key in self.dates:
                metadata[key] = self.dates[key]
        return metadata


def normalize_tag(tag: str) -> str:
    """``#Area/Sub/`` → ``area/sub`` (Obsidian matches tags case-insensitively)."""
    return tag.strip().lstrip("#").strip("/").lower()


def _unique(items: list[str]) -> list[str]:
    """Non-empty ``items`` without repeats, in first-seen order (linear: a note may list 100k)."""
    return list(dict.fromkeys(item for item in items if item))


def _scalars(value: Any, split: str) -> list[str]:
    """A frontmatter list or string as strings; nested structures are ignored."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [p.strip() for p in re.split(split, str(value)) if p.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v)]
    return []


def _is_tag(name: str) -> bool:
    return bool(name.strip("/")) and not name.strip("/").isdigit()


# --- vault: where embedded files are found ---------------------------------------------


@dataclass
class Vault:
    """A notes folder seen the way Obsidian resolves ``![[file]]`` embeds."""

    root: Path
    attachment_folder: str = ""
    """``attachmentFolderPath`` from ``.obsidian/app.json`` ('' when absent)."""
    warnings: list[str] = field(default_factory=list)
    """Why the vault's settings were not used (the defaults were)."""

    @classmethod
    def open(cls, root: str | Path) -> Vault:
        """The vault at ``root``, reading its attachment folder setting if there is one.

        No ``app.json`` is normal (a plain folder of notes); one that cannot be read is
        reported in ``warnings``, and the vault is read with Obsidian's defaults.
        """
        root = Path(root)
        path = root / ".obsidian" / "app.json"
        try:
            settings = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return cls(root)
        except (OSError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return cls(root, warnings=[f"{path} is unreadable ({reason}); using defaults"])
        if not isinstance(settings, dict):
            return cls(root, warnings=[f"{path} is not a JSON object; using defaults"])
        folder = settings.get("attachmentFolderPath", "")
        if not isinstance(folder, str):
            problem = f"{path}: attachmentFolderPath is not text; using the default"
            return cls(root, warnings=[problem])
        return cls(root, folder)

    @functools.cached_property
    def files(self) -> list[str]:
        """Vault-relative paths of every file outside hidden folders."""
        found = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # never walk .git or .trash
            base = Path(folder).relative_to(self.root)
            found += [(base / n).as_posix() for n in names if not n.startswith(".")]
        return sorted(found)

    def _usable(self, relative: str) -> bool:
        relative = posixpath.normpath(relative)
        if relative.startswith("..") or relative.startswith("/"):
            return False
        if any(part.startswith(".") for part in relative.split("/") if part):
            return False
        folder, name = posixpath.split(relative)
        if _folded(name) not in self._names_in(folder):
            return False  # one listing per folder, not a file-system call per embed
        return (self.root / relative).is_file()

    def _names_in(self, folder: str) -> frozenset[str]:
        """The names in a vault folder, folded as a case-insensitive file system compares."""
        names = self._listings.get(folder)
        if names is None:
            try:
                names = frozenset(_folded(n) for n in os.listdir(self.root / folder))
            except OSError:
                names = frozenset()
            self._listings[folder] = names
        return names

    @functools.cached_property
    def _listings(self) -> dict[str, frozenset[str]]:
        return {}

    def resolve(self, target: str, source: str) -> str | None:
        """Vault-relative path of the file ``target`` names from note ``source``, if any.

        Obsidian's order: next to the note (or a path from the vault root), then the
        attachment folder, then the one file in the vault with that name.
        """
        note_dir = posixpath.dirname(source)
        folder = self.attachment_folder.strip()
        if folder.startswith("./"):
            attachments = posixpath.join(note_dir, folder[2:])
        else:
            attachments = folder.strip("/")
        for candidate in (
            posixpath.join(note_dir, target),
            target,
            posixpath.join(attachments, target),
        ):
            if self._usable(candidate):
                return posixpath.normpath(candidate)
        wanted = target.lower()
        # Only files with the wanted name can end with it: one look-up, not a walk of the
        # vault per embed (a note may embed 100,000 missing files).
        named = self._by_name.get(posixpath.basename(wanted), [])
        matches = [f for f in named if f.lower() == wanted or f.lower().endswith("/" + wanted)]
        return matches[0] if len(matches) == 1 else None

    @functools.cached_property
    def _by_name(self) -> dict[str, list[str]]:
        """Vault files by lower-case file name."""
        found: dict[str, list[str]] = {}
        for path in self.files:
            found.setdefault(posixpath.basename(path).lower(), []).append(path)
        return found


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


# --- the transformation -------------------------------------------------------------------


def split_frontmatter(text: str, meta: NoteMeta) -> str:
    """The note without its YAML frontmatter, whose facts go into ``meta``."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return text
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:  # Obsidian too reads an unclosed '---' as a horizontal rule
        return text
    body = "\n".join(lines[end + 1 :])
    source = "\n".join(lines[1:end])
    if len(source.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        limit = MAX_FRONTMATTER_BYTES // 1024
        meta.warnings.append(f"frontmatter is larger than {limit} KB; indexed without it")
        return body
    import yaml

    try:
        if _yaml_depth(source) > MAX_FRONTMATTER_DEPTH:
            meta.warnings.append(
                f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels; indexed without it"
            )
            return body
        data = yaml.safe_load(source)
    except (yaml.YAMLError, ValueError) as exc:
        # ValueError: YAML that parses but makes no value (`created: 2024-13-45` is read as
        # a date, month 13; an integer of over 4,300 digits) stopped the whole load before.
        reason = str(exc).splitlines()[0]
        meta.warnings.append(f"frontmatter is not valid YAML ({reason}); indexed without it")
        return body
    if data is None:
        return body
    if not isinstance(data, dict):
        meta.warnings.append("frontmatter is not a set of key: value pairs; indexed without it")
        return body
    fields = {str(k).strip().lower(): v for k, v in data.items()}
    title = fields.get("title")
    if isinstance(title, (str, int, float)) and not isinstance(title, bool):
        meta.title = str(title).strip()
    meta.aliases += _scalars(fields.get("aliases", fields.get("alias")), r",")
    for raw in _scalars(fields.get("tags", fields.get("tag")), r"[,\s]+"):
        if _is_tag(raw.lstrip("#")):
            meta.tags.append(normalize_tag(raw))
    for key, value in fields.items():
        if isinstance(value, (dt.date, dt.datetime)):
            meta.dates[key] = value.isoformat()
    # Shown as written: YAML 1.1 reads `doors: 19:30` as 1170 and `zip: 01234` as 668.
    try:
        written = yaml.load(source, Loader=yaml.BaseLoader)
    except (yaml.YAMLError, ValueError, TypeError):
        written = None  # read above, so not expected: the note keeps its text, unshown
    for key, value in written.items() if isinstance(written, dict) else ():
        line = _property_line(str(key), value, meta)
        if line:
            meta.properties.append(line)
    for name, keys in _DATE_KEYS.items():
        for key in keys:
            if key in meta.dates:
                meta.dates.setdefault(name, meta.dates[key])
                break
    return body


def shown_key(key: str) -> str:
    """A property's name as its text line reads it ('' for the note's metadata).

    Underscores read as spaces (``zuletzt_gebacken``: "zuletzt gebacken").
    """
    key = key.strip().strip("'\"").strip()
    return "" if key.casefold() in METADATA_KEYS else re.sub(r"[\s_]+", " ", key).strip()


def _property_line(key: str, value: Any, meta: NoteMeta) -> str:
    """``key: value`` as a reader would write it ('' for metadata, empty or nested values).

    A list's items are joined by commas; a link reads as its text (and is recorded, as
    Obsidian does).
    """
    name = shown_key(key)
    if not name:
        return ""
    items = value if isinstance(value, list) else [value]
    shown = [_property_value(item, meta) for item in items]
    text = ", ".join(v for v in shown if v)
    return f"{name}: {text}" if text else ""


def _property_value(value: Any, meta: NoteMeta) -> str:
    """One scalar property value as written, on one line.

    '' for a nested list or mapping, which Obsidian does not show either.
    """
    if not isinstance(value, str):
        return ""
    text = _EMBED.sub(lambda m: _link_text(m.group(1), meta), value)
    text = _WIKILINK.sub(lambda m: _link_text(m.group(1), meta), text)
    return _as_text(re.sub(r"\s+", " ", text).strip())


def _as_text(value: str) -> str:
    """``value`` read as text, not HTML.

    Obsidian shows a property as written, and an ``<iframe`` in one would have the markdown
    reader drop the rest of the note.
    """
    return value.replace("<", "&lt;")


def parser_for(text: str) -> int:
    """The oldest parser that reads ``text`` as this one does (1 or 2).

    2 for a note with properties other than its metadata, in its frontmatter or as
    ``key:: value`` lines. A scan, not a parse (it runs for every unchanged note of every
    load); it errs towards 2, which only has a note read again once.
    """
    if not (text.startswith("---") or "::" in text):
        return 1  # most notes: no line of them looked at
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[0].rstrip() == "---":
        for line in lines[1:]:
            if line.rstrip() in ("---", "..."):
                break
            shape = _METADATA_LINE.match(line)
            if shape is None and (":" in line or line.lstrip().startswith(("?", "{"))):
                return 2  # a key of another shape, whatever it names
            if shape is not None and shape.group(2) is not None and shown_key(shape.group(2)):
                return 2
    if "::" in text:
        for line in lines:
            prop = _PROPERTY.match(line)
            if prop and shown_key(prop.group(1)):
                return 2
    return 1


def _yaml_depth(source: str) -> int:
    """How deep the YAML in ``source`` nests, up to one level past the limit.

    PyYAML's event parser keeps its own stack, unlike its composer, which recurses once
    per level: the depth is known before anything could raise ``RecursionError``.
    """
    import yaml

    depth = deepest = 0
    for event in yaml.parse(source, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_FRONTMATTER_DEPTH:
                break
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return deepest


def _link_text(inner: str, meta: NoteMeta) -> str:
    """``Note``, ``Note|alias``, ``Note#Heading`` → readable text; the target is recorded."""
    inner = inner.replace("\\|", "|")
    target, _, alias = inner.partition("|")
    note, _, anchor = target.partition("#")
    note, anchor = note.strip(), anchor.strip()
    if note.lower().endswith(".md"):  # [[Note.md]] reads as Obsidian shows it: Note
        note = note[:-3]
    if note:
        meta.links.append(note)
    if alias.strip():
        return alias.strip()
    if anchor.startswith("^"):  # a block reference: the id means nothing to a reader
        anchor = ""
    anchor = " > ".join(a.strip() for a in anchor.split("#") if a.strip())
    return " > ".join(p for p in (note, anchor) if p)


def _embed(inner: str, source: str, vault: Vault | None, meta: NoteMeta) -> str:
    """An image embed becomes a markdown image resolved like Obsidian; anything else a link."""
    target, _, option = inner.replace("\\|", "|").partition("|")
    target = target.split("#", 1)[0].strip()
    if posixpath.splitext(target)[1].lower() not in IMAGE_SUFFIXES or "://" in target:
        return _link_text(inner, meta)
    found = vault.resolve(target, source) if vault is not None else None
    # Unresolved: the note's own folder, where Obsidian looks first.
    relative = posixpath.relpath(found, posixpath.dirname(source) or ".") if found else target
    label = option.strip() if option.strip() and not _SIZE.match(option.strip()) else None
    stem = posixpath.splitext(posixpath.basename(target))[0]
    alt = label or re.sub(r"[-_]+", " ", stem).strip()
    return f"![{alt}](<{relative}>)"


def _inline(text: str, source: str, vault: Vault | None, meta: NoteMeta) -> str:
    """Embeds, links and tags of a line's text outside code spans."""
    text = _EMBED.sub(lambda m: _embed(m.group(1), source, vault, meta), text)
    text = _WIKILINK.sub(lambda m: _link_text(m.group(1), meta), text)
    for name in _TAG.findall(text):
        if _is_tag(name):
            meta.tags.append(normalize_tag(name))
    return text


def _outside_code(line: str, transform: Any) -> str:
    """Apply ``transform`` to the parts of ``line`` that are not code spans.

    A line with a run of more than ``_MAX_TICKS`` backticks is taken as having none: the
    code-span regex tries every shorter opening run in turn, so one line of 20,000 backticks
    took 467 s; with runs of 8 at most, 1 MB takes under a second.
    """
    if _LONG_TICKS.search(line):
        return str(transform(line))
    out, last = [], 0
    for match in _CODE_SPAN.finditer(line):
        out.append(transform(line[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(transform(line[last:]))
    return "".join(out)


def _strip_tags(text: str) -> str:
    return re.sub(
        r"\s+", " ", _TAG.sub(lambda m: "" if _is_tag(m.group(1)) else m.group(0), text)
    ).strip()


def _property(name: str, value: str, meta: NoteMeta) -> None:
    key = name.lower()
    if key in ("tags", "tag"):
        meta.tags += [
            normalize_tag(t) for t in re.split(r"[,\s]+", value) if _is_tag(t.lstrip("#"))
        ]
    elif key in ("alias", "aliases"):
        meta.aliases += [a.strip() for a in value.split(",") if a.strip()]
    elif key == "title" and not meta.title:
        meta.title = value.strip()


def prepare_note(text: str, source: str = "", vault: Vault | None = None) -> tuple[str, NoteMeta]:
    """Plain markdown for unstructured, and what the Obsidian syntax said.

    Args:
        text: The note as read.
        source: Its path relative to the vault (embeds resolve from its folder).
        vault: The notes folder, to resolve ``![[file]]`` embeds (``None``: next to the note).
    """
    meta = NoteMeta()
    body = split_frontmatter(text.replace("\r\n", "\n"), meta)
    lines: list[str] = []
    fence = ""
    started = False  # has any text been kept yet (each pass keeps one line at most)
    for line in body.split("\n"):
        started = started or bool(lines and lines[-1].strip())
        opening = _FENCE.match(line)
        if fence:
            lines.append(line)
            if opening and opening.group(1) == fence:
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            lines.append(line)
            continue
        prop = _PROPERTY.match(line)
        if prop and "`" not in line:
            if not shown_key(prop.group(1)):
                _property(prop.group(1), prop.group(2), meta)
                continue
            if not started:
                # Before any text: the note's own properties (Logseq writes them so), read
                # with its frontmatter's in its first section.
                shown = _property_line(prop.group(1), prop.group(2), meta)
                meta.properties += [shown] if shown else []
                continue
            # A fact of the note: read as "key: value", as text (see _as_text)
            line = _as_text(line.replace("::", ":", 1))
        callout = _CALLOUT.match(line)
        if callout:
            prefix, kind, title = callout.groups()
            line = prefix + (title or kind.replace("-", " ").capitalize())
        heading = _HEADING.match(line)
        if heading:
            marks, space, title = heading.groups()
            title = _outside_code(title, lambda t: _inline(t, source, vault, meta))
            lines.append(marks + space + _strip_tags(title))
            continue
        line = _outside_code(line, lambda t: _inline(t, source, vault, meta))
        if line.strip() and not _strip_tags(line):
            continue  # a line of tags only: metadata, nothing for a reader
        # '#tag' opening a line is a tag for Obsidian, but a heading for python-markdown.
        lines.append(re.sub(r"^(\s*)#(?=[\w/-])", r"\1\\#", line))
    meta.tags = _at_most(_unique(meta.tags), MAX_TAGS, "tags", meta)
    meta.aliases = _at_most(_unique(meta.aliases), MAX_ALIASES, "aliases", meta)
    meta.links = _at_most(_unique(meta.links), MAX_LINKS, "links", meta)
    return "\n".join(_with_properties(lines, meta.properties)), meta


def _with_properties(lines: list[str], properties: list[str]) -> list[str]:
    """The note's properties (``NoteMeta.properties``) as a list in its first section.

    After its opening heading, where Obsidian shows them under the note's title, or at its
    top.
    """
    if not properties:
        return lines
    block = [*(f"- {p}" for p in properties), ""]
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    if first < len(lines) and _HEADING.match(lines[first]):
        return [*lines[: first + 1], "", *block, *lines[first + 1 :]]
    return [*block, *lines]


def _at_most(items: list[str], limit: int, what: str, meta: NoteMeta) -> list[str]:
    if len(items) > limit:
        meta.warnings.append(f"{len(items)} {what}; only the first {limit} are kept")
    return items[:limit]
