"""Obsidian-flavoured markdown → plain markdown for unstructured, plus the note's facts.

Obsidian (and Logseq) notes carry syntax that means something to the app but is noise to a
reader or a retriever: YAML frontmatter, ``[[wikilinks]]``, ``![[embeds]]``, inline
``#tags``, callout markers and ``key:: value`` properties. :func:`prepare_note` turns a
note's text into markdown a reader would write by hand and a :class:`NoteMeta` holding what
the syntax said (title, aliases, tags, dates, links). Code spans and fenced code blocks are
left exactly as written.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.index.image_files import IMAGE_SUFFIXES

#: Bumped whenever the same note text would be indexed differently; recorded on the
#: collection and on every chunk, so a load re-reads notes indexed by an older parser.
#: 0: no Obsidian handling (collections made before this module); 1: this module.
PARSER_VERSION = 1

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_HEADING = re.compile(r"^(\s{0,3}#{1,6})(\s+)(.*)$")
_PROPERTY = re.compile(r"^\s*(?:-\s+)?([A-Za-z][\w-]*)::\s?(.*)$")
_CALLOUT = re.compile(r"^(\s*(?:>\s*)+)\[!([\w-]+)\][+-]?\s*(.*)$")
_EMBED = re.compile(r"!\[\[([^\[\]\n]+)\]\]")
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
# Obsidian: a tag follows whitespace (or starts the line) and holds letters, digits, '_',
# '-' and '/', with at least one character that is not a digit.
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
_SIZE = re.compile(r"^\d+(x\d+)?$")
_DATE_KEYS = {
    "created": ("created", "date", "date created", "creation date"),
    "modified": ("modified", "updated", "last modified", "date modified"),
}


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
    seen: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.append(item)
    return seen


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

    @classmethod
    def open(cls, root: str | Path) -> Vault:
        """The vault at ``root``, reading its attachment folder setting if there is one."""
        root = Path(root)
        folder = ""
        try:
            settings = json.loads((root / ".obsidian" / "app.json").read_text("utf-8"))
            if isinstance(settings, dict) and isinstance(settings.get("attachmentFolderPath"), str):
                folder = settings["attachmentFolderPath"]
        except (OSError, ValueError):
            pass
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
        return (self.root / relative).is_file()

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
        matches = [f for f in self.files if f.lower() == wanted or f.lower().endswith("/" + wanted)]
        return matches[0] if len(matches) == 1 else None


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
    import yaml

    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
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
    for name, keys in _DATE_KEYS.items():
        for key in keys:
            if key in meta.dates:
                meta.dates.setdefault(name, meta.dates[key])
                break
    return body


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
    """Apply ``transform`` to the parts of ``line`` that are not code spans."""
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
    for line in body.split("\n"):
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
            _property(prop.group(1), prop.group(2), meta)
            continue
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
    meta.tags = _unique(meta.tags)
    meta.aliases = _unique(meta.aliases)
    meta.links = _unique(meta.links)
    return "\n".join(lines), meta
