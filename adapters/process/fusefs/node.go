package fusefs

import (
	"context"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a file or directory of the mount, known to the kernel. It holds no state of its own:
// its path is where go-fuse's tree puts it, and every question goes to fsys.
type node struct {
	fs.Inode
	srv *Server
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeReadlinker     = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
	_ fs.NodeAccesser       = (*node)(nil)
)

// rel returns the node's path relative to the root of fsys ("." for the root), and false if the
// node is in no directory any more (unlinked while open).
func (n *node) rel() (string, bool) {
	var parts []string
	in, root := n.EmbeddedInode(), n.Root()
	for in != root {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		parts = append(parts, name)
		in = parent
	}
	if len(parts) == 0 {
		return ".", true
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return path.Join(parts...), true
}

// child returns the path of the entry name in the directory n.
func (n *node) child(name string) (string, bool) {
	p, ok := n.rel()
	if !ok {
		return "", false
	}
	if p == "." {
		return name, true
	}
	return p + "/" + name, true
}

// typeBits returns the S_IF* bits of a file of mode m: fsys holds directories and regular
// files only.
func typeBits(m os.FileMode) uint32 {
	if m.IsDir() {
		return syscall.S_IFDIR
	}
	return syscall.S_IFREG
}

// fill describes fi to the kernel.
func (s *Server) fill(out *fuse.Attr, fi *info) {
	out.Mode = typeBits(fi.Mode) | uint32(fi.Mode.Perm())
	if fi.Mode&os.ModeSetuid != 0 {
		out.Mode |= syscall.S_ISUID
	}
	if fi.Mode&os.ModeSetgid != 0 {
		out.Mode |= syscall.S_ISGID
	}
	if fi.Mode&os.ModeSticky != 0 {
		out.Mode |= syscall.S_ISVTX
	}
	// One link, also for directories: fsys keeps no count of subdirectories, and a directory
	// link count of 1 tells find(1) and fts(3) not to infer one.
	out.Nlink = 1
	if fi.Size > 0 {
		out.Size = uint64(fi.Size)
	}
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	out.Owner = fuse.Owner{Uid: s.uid, Gid: s.gid}
	mt := fi.ModTime
	out.SetTimes(&mt, &mt, &mt)
}

// childInode returns the inode for the entry name of n that fsys describes as fi: the one the
// kernel already knows under that name if it is of the same type, else a new one. Reusing it
// keeps a file's inode number, and the POSIX locks the kernel keeps on its inode, the same
// for every process that opens it.
func (n *node) childInode(ctx context.Context, name string, fi *info, fresh bool) *fs.Inode {
	mode := typeBits(fi.Mode)
	if !fresh {
		if ch := n.GetChild(name); ch != nil && ch.StableAttr().Mode == mode {
			return ch
		}
	}
	return n.NewInode(ctx, &node{srv: n.srv}, fs.StableAttr{Mode: mode})
}

// Lookup finds the entry name of the directory n.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p, ok := n.child(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	r := n.srv.ask(ctx, &request{Op: opStat, Path: p})
	if r.Errno != 0 {
		return nil, r.Errno
	}
	n.srv.fill(&out.Attr, &r.Info)
	return n.childInode(ctx, name, &r.Info, false), 0
}

// handled is an open file or directory: it has a handle in the backend.
type handled interface{ handle() uint64 }

// Getattr describes n, through the open handle f if there is one (fstat of a file that was
// unlinked or renamed while open).
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	req := &request{Op: opStat}
	if h, ok := f.(handled); ok {
		req.Op, req.Handle = opFstat, h.handle()
	} else if p, ok := n.rel(); ok {
		req.Path = p
	} else {
		return syscall.ENOENT
	}
	r := n.srv.ask(ctx, req)
	if r.Errno != 0 {
		return r.Errno
	}
	n.srv.fill(&out.Attr, &r.Info)
	return 0
}

// Setattr changes n's mode, owner, size or modification time: chmod, chown, truncate(2) and
// ftruncate, utimensat. A truncation through an open file uses its handle; one by path opens
// the file for writing, truncates it and closes it.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p, named := n.rel()
	h, _ := f.(*fileHandle)
	if !named && h == nil {
		return syscall.ENOENT
	}
	req := &request{Op: opSetattr, Path: p, Attr: attrChange{Named: named}}
	a := &req.Attr
	if h != nil {
		req.Handle, a.HandleWrite = h.h, h.writable
	}
	if mode, ok := in.GetMode(); ok {
		perm := os.FileMode(mode & 0o777)
		if mode&syscall.S_ISUID != 0 {
			perm |= os.ModeSetuid
		}
		if mode&syscall.S_ISGID != 0 {
			perm |= os.ModeSetgid
		}
		if mode&syscall.S_ISVTX != 0 {
			perm |= os.ModeSticky
		}
		a.SetMode, a.Mode = true, perm
	}
	if uid, ok := in.GetUID(); ok {
		a.SetUID, a.UID = true, int(uid)
	}
	if gid, ok := in.GetGID(); ok {
		a.SetGID, a.GID = true, int(gid)
	}
	if size, ok := in.GetSize(); ok {
		a.SetSize, a.Size = true, int64(size)
	}
	if in.Valid&fuse.FATTR_MTIME != 0 {
		if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
			a.MtimeNow = true
		} else {
			a.SetMtime, a.Mtime = true, time.Unix(int64(in.Mtime), int64(in.Mtimensec))
		}
	}
	r := n.srv.ask(ctx, req)
	if r.Errno != 0 {
		return r.Errno
	}
	n.srv.fill(&out.Attr, &r.Info)
	return 0
}

// openFlags keeps the open(2) flags that an afero.Fs understands. O_SYNC and O_DSYNC are the
// server's business (it fsyncs after every write), O_APPEND the handle's (see fileHandle.Write).
func openFlags(kflags uint32) int {
	f := int(kflags)
	return f & (syscall.O_ACCMODE | os.O_APPEND | os.O_CREATE | os.O_EXCL | os.O_TRUNC)
}

// Open opens the file n. The kernel has checked the flags; O_TRUNC arrives here (atomic
// truncation on open) so that fsys sees the single truncating open the program made.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.rel()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	r := n.srv.ask(ctx, &request{Op: opOpen, Path: p, Flags: openFlags(flags)})
	if r.Errno != 0 {
		return nil, 0, r.Errno
	}
	return n.srv.newFileHandle(r.Handle, flags), fuse.FOPEN_DIRECT_IO, 0
}

// Create creates and opens the file name in the directory n (open with O_CREAT of a name the
// kernel found missing; O_EXCL is passed on).
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.child(name)
	if !ok {
		return nil, nil, 0, syscall.ENOENT
	}
	oflags := openFlags(flags) | os.O_CREATE
	r := n.srv.ask(ctx, &request{Op: opCreate, Path: p, Flags: oflags, Mode: mode})
	if r.Errno != 0 {
		return nil, nil, 0, r.Errno
	}
	n.srv.fill(&out.Attr, &r.Info)
	ch := n.childInode(ctx, name, &r.Info, oflags&os.O_EXCL != 0)
	return ch, n.srv.newFileHandle(r.Handle, flags), fuse.FOPEN_DIRECT_IO, 0
}

// Mkdir creates the directory name in n.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p, ok := n.child(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	r := n.srv.ask(ctx, &request{Op: opMkdir, Path: p, Mode: mode})
	if r.Errno != 0 {
		return nil, r.Errno
	}
	n.srv.fill(&out.Attr, &r.Info)
	return n.childInode(ctx, name, &r.Info, true), 0
}

// remove removes the entry name of n, which must be a directory (rmdir) or must not (unlink).
func (n *node) remove(ctx context.Context, name string, dir bool) syscall.Errno {
	p, ok := n.child(name)
	if !ok {
		return syscall.ENOENT
	}
	return n.srv.ask(ctx, &request{Op: opRemove, Path: p, Dir: dir}).Errno
}

// Unlink removes the file name from n.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, false)
}

// Rmdir removes the empty directory name from n.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, true)
}

// The renameat2 flags.
const (
	renameNoReplace = 1 << 0
	renameExchange  = 1 << 1
	renameWhiteout  = 1 << 2
)

// Rename renames name in n to newName in newParent. RENAME_NOREPLACE is honoured;
// RENAME_EXCHANGE and RENAME_WHITEOUT fail with EINVAL, as on a filesystem without them.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok || np.srv != n.srv {
		return syscall.EXDEV
	}
	if flags&(renameExchange|renameWhiteout) != 0 || flags&^uint32(renameNoReplace|renameExchange|renameWhiteout) != 0 {
		return syscall.EINVAL
	}
	from, ok1 := n.child(name)
	to, ok2 := np.child(newName)
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	return n.srv.ask(ctx, &request{Op: opRename, Path: from, To: to, Flags: int(flags)}).Errno
}

// Link fails with EPERM: fsys (a faults.Disk) has no hard links, and EPERM is what link(2)
// returns on a filesystem without them. git falls back to rename.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Symlink fails with EPERM: fsys has no symbolic links (symlink(2)'s errno for a filesystem
// without them). git init notices and sets core.symlinks=false.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Mknod fails with EPERM: fsys holds only files and directories.
func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Readlink fails with EINVAL: nothing on the mount is a symbolic link.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return nil, syscall.EINVAL
}

// OpendirHandle opens the directory n. The handle's afero file is what an fsync of the
// directory syncs; listings are read fresh from fsys.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.rel()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	r := n.srv.ask(ctx, &request{Op: opOpendir, Path: p})
	if r.Errno != 0 {
		return nil, 0, r.Errno
	}
	return &dirHandle{srv: n.srv, node: n, h: r.Handle}, 0, 0
}

// Statfs describes a roomy filesystem: fsys has no size, and a full disk is a fault the
// injector decides on.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 28 // 1 TiB of 4 KiB blocks
	*out = fuse.StatfsOut{
		Blocks: blocks, Bfree: blocks / 2, Bavail: blocks / 2,
		Files: 1 << 24, Ffree: 1 << 23,
		Bsize: 4096, Frsize: 4096, NameLen: 255,
	}
	return 0
}

// Access answers ENOSYS, which tells the kernel to stop sending access checks: the mount checks
// no permissions (see Options.UID), and an ACCESS request on every chdir(2) and access(2)
// would be one more call on fsys.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno { return syscall.ENOSYS }
