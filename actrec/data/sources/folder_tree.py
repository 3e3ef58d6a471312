"""What a class-per-folder tree holds: the videos of each class folder, and every other
file or folder under the root with the reason it is not a video of a class.

- A class is a folder directly under the root, named exactly as its folder (spaces,
  accents, letter case kept).
- A video is a file whose extension is one of VIDEO_EXTENSIONS in any letter case
  (.MP4, .Mp4, .mov, ...), anywhere under its class folder: videos in sub-folders
  (`Tai Chi/session1/clip.mp4`) belong to the top-level class folder. Its id is its path
  relative to the root without the extension.
- A frame folder, a folder under a class folder holding image files only (.jpg, .png,
  ...; actrec.data.format.frame_folder), is one video: its frames in file-name order.
  Its id is its path relative to the root.
- Links are followed: a linked video, a linked class folder, a linked sub-folder. Every
  folder is searched once: a link back to a folder that holds it (a loop) or to a folder
  already searched is reported, not followed. Real class folders are claimed first, so
  a link never moves another class's videos into its class.
- Reported, not listed (reason codes of report.json's "ignored"): "hidden" (names starting
  with ".": .DS_Store, ._clip.mp4 macOS metadata, .git/; a hidden folder is not
  searched), "not-a-video" (any other extension), "not-in-class-folder" (a video directly
  in the root), "empty-class-folder", "broken-symlink", "symlink-loop",
  "duplicate-folder", "duplicate-name" (two videos whose ids are the same: clip.mp4 and
  clip.mov), "bad-name" (not valid UTF-8), "not-a-file" (a pipe, socket or device),
  "unreadable" (a folder that cannot be listed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from actrec.data.format.frame_folder import is_frame_folder
from actrec.data.sources.base import VIDEO_EXTENSIONS, IgnoredPath
from actrec.errors import DatasetError


@dataclass
class FolderTree:
    """videos_by_class: {class: {video id: path}} of the class folders holding videos;
    empty_classes: class folders without any; ignored: everything else, in walk order;
    frame_folders: the ids of the videos that are frame folders."""

    videos_by_class: dict[str, dict[str, Path]] = field(default_factory=dict)
    empty_classes: list[str] = field(default_factory=list)
    ignored: list[IgnoredPath] = field(default_factory=list)
    frame_folders: list[str] = field(default_factory=list)


def has_video_extension(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS


def not_a_video_detail(name: str) -> str:
    extension = os.path.splitext(name)[1].lower()
    return f"not a video file ({extension or 'no extension'})"


def scan_folder_tree(root: Path) -> FolderTree:
    """Walk `root` once (sorted, links followed once); DatasetError if it cannot be listed."""
    return _TreeScan(root).run()


class _TreeScan:
    def __init__(self, root: Path):
        self.root = root
        self.tree = FolderTree()
        self.searched = {os.path.realpath(root): ""}  # real folder -> its first relative path

    def run(self) -> FolderTree:
        try:
            entries = _sorted_entries(self.root)
        except OSError as error:
            raise DatasetError(
                f"cannot list the dataset root {self.root} ({error.strerror}); check that it "
                "is a readable folder and pass it with --root"
            ) from error
        kinds = {entry.name: self.kind(entry, self.shown(entry.name)) for entry in entries}
        class_entries = [entry for entry in entries if kinds[entry.name] == "folder"]
        for entry in class_entries:  # real class folders first: links cannot claim them
            if not entry.is_symlink():
                self.searched.setdefault(os.path.realpath(entry.path), entry.name)
        for entry in entries:
            if kinds[entry.name] == "file":
                if has_video_extension(entry.name):
                    self.ignore(
                        entry.name,
                        "not-in-class-folder",
                        "a video directly in the root, not in a class folder: move it into "
                        "the folder of its class",
                    )
                else:
                    self.ignore(entry.name, "not-a-video", not_a_video_detail(entry.name))
            elif kinds[entry.name] == "folder":
                self.class_folder(entry)
        return self.tree

    def class_folder(self, entry: os.DirEntry) -> None:
        if entry.is_symlink() and not self.enter(entry.path, entry.name):
            return
        videos: dict[str, Path] = {}
        self.search(Path(entry.path), entry.name, videos)
        if videos:
            self.tree.videos_by_class[entry.name] = videos
            return
        self.tree.empty_classes.append(entry.name)
        self.ignore(
            entry.name + "/",
            "empty-class-folder",
            "a class folder without video files, so not a class: add videos or remove it",
        )

    def search(self, folder: Path, relative: str, videos: dict[str, Path]) -> None:
        """Add the videos under `folder` (`relative` to the root) to `videos`."""
        try:
            entries = _sorted_entries(folder)
        except OSError as error:
            self.ignore(
                relative + "/",
                "unreadable",
                f"folder cannot be listed ({error.strerror}): fix its permissions",
            )
            return
        for entry in entries:
            child = f"{relative}/{self.shown(entry.name)}"
            kind = self.kind(entry, child)
            if kind == "folder" and is_frame_folder(Path(entry.path)):
                if self.enter(entry.path, child):
                    videos[child] = Path(entry.path)
                    self.tree.frame_folders.append(child)
            elif kind == "folder" and self.enter(entry.path, child):
                self.search(Path(entry.path), child, videos)
            elif kind == "file" and not has_video_extension(entry.name):
                self.ignore(child, "not-a-video", not_a_video_detail(entry.name))
            elif kind == "file":
                video_id = PurePosixPath(child).with_suffix("").as_posix()
                if video_id in videos:
                    first = videos[video_id].relative_to(self.root).as_posix()
                    self.ignore(
                        child,
                        "duplicate-name",
                        f"{first} has the same name without its extension, and only it is "
                        "listed: rename one to keep both",
                    )
                else:
                    videos[video_id] = Path(entry.path)

    def kind(self, entry: os.DirEntry, relative: str) -> str | None:
        """The entry's kind: "folder", "file", or None when it is reported here."""
        name = entry.name
        if not _is_utf8(name):
            self.ignore(relative, "bad-name", "the name is not valid UTF-8: rename it")
        elif name.startswith("."):
            if entry.is_dir():
                self.ignore(relative + "/", "hidden", "hidden folder, not searched")
            elif name.startswith("._"):
                self.ignore(relative, "hidden", "hidden file (._ macOS metadata, not a video)")
            else:
                self.ignore(relative, "hidden", "hidden file")
        elif entry.is_symlink() and not os.path.exists(entry.path):
            target = os.readlink(entry.path)
            self.ignore(relative, "broken-symlink", f"broken symlink -> {target}")
        elif entry.is_dir():
            return "folder"
        elif entry.is_file():
            return "file"
        else:
            self.ignore(relative, "not-a-file", "not a regular file (a pipe, socket or device)")
        return None

    def enter(self, path: str, relative: str) -> bool:
        """Whether to search the folder at `path`: False (and reported) when its real
        folder was searched already."""
        real = os.path.realpath(path)
        first = self.searched.get(real)
        if first is None:
            self.searched[real] = relative
            return True
        target = os.readlink(path) if os.path.islink(path) else real
        holder = os.path.realpath(os.path.dirname(path))
        if holder == real or holder.startswith(real.rstrip(os.sep) + os.sep):
            self.ignore(
                relative + "/",
                "symlink-loop",
                f"symlink loop -> {target}: it links to a folder that holds it, not followed",
            )
        else:
            self.ignore(
                relative + "/",
                "duplicate-folder",
                f"linked folder -> {target} is {first or '.'}/, searched already: its "
                "videos are listed once",
            )
        return False

    def shown(self, name: str) -> str:
        """A name as reports show it (bytes that are not UTF-8 as \\xNN)."""
        return name if _is_utf8(name) else os.fsencode(name).decode("utf-8", "backslashreplace")

    def ignore(self, relative: str, reason: str, detail: str) -> None:
        self.tree.ignored.append(IgnoredPath(relative, reason, detail))


def _sorted_entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda entry: entry.name)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
