#!/bin/sh
# Builds the container image of duix_exporter without a Docker daemon and
# without pulling a base image: the binary is static (CGO_ENABLED=0), so the
# image is one layer on an empty base, made with go-containerregistry's
# crane. `make image` runs it; run it from the repository root.
#
#   deploy/image/build.sh CRANE BINARY IMAGE VERSION REVISION SOURCE OUTDIR
#
# CRANE is the crane binary, BINARY the static exporter built for linux,
# IMAGE the reference to tag (registry/repository:tag), OUTDIR where to
# write the image: OUTDIR/image.tar (for `podman load` or `docker load`),
# OUTDIR/oci (an OCI image layout) and OUTDIR/digest.
#
# The layer holds the binary, the CA bundle of this machine
# (/etc/ssl/certs/ca-certificates.crt), /etc/passwd and /etc/group with the
# non-root user nonroot (65532:65532, as distroless' nonroot, which the
# Dockerfile uses) and an empty /tmp. crane only edits an image's
# configuration in a registry, so the script serves crane's own in-memory
# registry on 127.0.0.1 for the time of the build, and saves the result
# from there. Files carry the time of the last commit (SOURCE_DATE_EPOCH
# when set), so that the same tree gives the same layer.
set -eu

if [ $# -ne 7 ]; then
	echo "usage: $0 CRANE BINARY IMAGE VERSION REVISION SOURCE OUTDIR" >&2
	exit 2
fi
crane_bin=$1 binary=$2 image=$3 version=$4 revision=$5 source=$6 outdir=$7
arch=${GOARCH:-$(go env GOARCH)}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

[ -x "$binary" ] || { echo "image: $binary is not an executable" >&2; exit 1; }
[ -s "$ca" ] || { echo "image: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }

work=$(mktemp -d)
registry_pid=
cleanup() {
	if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The root filesystem of the layer.
root=$work/root
mkdir -p "$root/bin" "$root/etc/ssl/certs" "$root/etc/duix_exporter" "$root/tmp"
cp "$binary" "$root/bin/duix_exporter"
chmod 0755 "$root/bin/duix_exporter"
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$root/etc/ssl/certs/ca-certificates.crt"
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
chmod 0644 "$root/etc/passwd" "$root/etc/group"
chmod 0755 "$root/bin" "$root/etc" "$root/etc/ssl" "$root/etc/ssl/certs" "$root/etc/duix_exporter"
chmod 1777 "$root/tmp"
tar --create --file="$work/layer.tar" --directory="$root" \
	--sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
	--format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	bin etc tmp

# crane's registry, on a port of loopback that the kernel picks.
"$crane_bin" registry serve --address 127.0.0.1:0 >"$work/registry.log" 2>&1 &
registry_pid=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$work/registry.log" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$registry_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then
	echo "image: crane's registry did not start:" >&2
	cat "$work/registry.log" >&2
	exit 1
fi
ref=127.0.0.1:$port/duix_exporter:$version

# crane logs each blob it pushes: keep that for a failure.
crane() {
	if ! "$crane_bin" "$@" >>"$work/crane.log" 2>&1; then
		echo "image: crane $1 failed:" >&2
		cat "$work/crane.log" >&2
		exit 1
	fi
}
crane append --oci-empty-base --new_layer "$work/layer.tar" --new_tag "$ref.base"
crane mutate "$ref.base" --tag "$ref" \
	--set-platform "linux/$arch" \
	--entrypoint /bin/duix_exporter \
	--cmd --config.file=/etc/duix_exporter/duix.yml \
	--user 65532:65532 \
	--workdir / \
	--exposed-ports 9866/tcp \
	--label org.opencontainers.image.title=duix_exporter \
	--label "org.opencontainers.image.description=Prometheus exporter for apps on the Duix digital-human platform" \
	--label "org.opencontainers.image.version=$version" \
	--label "org.opencontainers.image.revision=$revision" \
	--label "org.opencontainers.image.source=$source" \
	--label "org.opencontainers.image.created=$created" \
	--annotation "org.opencontainers.image.version=$version" \
	--annotation "org.opencontainers.image.revision=$revision" \
	--annotation "org.opencontainers.image.source=$source" \
	--annotation "org.opencontainers.image.created=$created"

rm -rf "$outdir/oci" "$outdir/image.tar" "$outdir/digest"
mkdir -p "$outdir"
crane pull --format oci "$ref" "$outdir/oci"
# The same image as a tarball named IMAGE (not after the temporary
# registry), which `podman load` and `docker load` read.
crane mutate "$ref" --tag "$image" --output "$outdir/image.tar"
"$crane_bin" digest "$ref" >"$outdir/digest"
echo "image: $image ($(cat "$outdir/digest"), linux/$arch) in $outdir/image.tar and the OCI layout $outdir/oci"
