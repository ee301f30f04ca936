#!/usr/bin/env bash
# Builds the binaries the tests and `watchword dev` need, from Go modules
# pinned in hack/tools/*/go.mod: kube-apiserver, kube-controller-manager and
# kubectl (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3) and, with
# the argument `vault`, the Vault server (github.com/hashicorp/vault). With
# the argument `lint` it builds only golangci-lint with the Kubernetes API
# linter compiled in (hack/tools/lint), and with `proto` only buf
# (hack/tools/proto), the protobuf compiler `make generate` runs for
# api/plugin, and with `helm` only Helm (hack/tools/helm), which the tests
# run to lint and render the chart in deploy/charts/watchword, and with
# `refdocs` only crd-ref-docs (hack/tools/refdocs), which `make generate`
# runs to write docs/api-reference.md. Each is cached under .cache/tools,
# keyed on its pinned version, and linked into .cache/tools/bin. Nothing is
# downloaded but Go modules, except for `postgres`: PostgreSQL for the
# example plugin's tests, `prometheus`: the Prometheus server and promtool for the
# Grafana dashboard's and the alerts' tests, and `barbican`: OpenStack Barbican and Keystone
# for the Barbican provider's tests, and `ldap`: OpenLDAP's slapd for the
# Vault provider's LDAP login test, all from Debian's packages (see below).
# $WATCHWORD_TOOLS_CACHE moves the cache elsewhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${WATCHWORD_TOOLS_CACHE:-$root/.cache/tools}"
bin="$cache/bin"
mkdir -p "$bin"

version_of() { # module dir, module path
  awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == "require" ? $3 : $2); exit }' "$1/go.mod"
}

# binname prints the file name `go build -o DIR/` gives a main package: its
# last path element, or the one before a major-version suffix (v3).
binname() {
  local base; base=$(basename "$1")
  if [[ "$base" =~ ^v[0-9]+$ ]]; then base=$(basename "$(dirname "$1")"); fi
  echo "$base"
}

build() { # name, tools module dir, module version, package[=link name]...
  local name=$1 dir=$2 ver=$3; shift 3
  local out="$cache/$name-$ver"
  local missing=()
  for spec in "$@"; do
    local pkg=${spec%%=*}
    [ -x "$out/$(binname "$pkg")" ] || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo ">> building ${missing[*]} at $ver (first build takes a few minutes)…"
    local start=$SECONDS
    mkdir -p "$out"
    (cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$out/" "${missing[@]}")
    echo ">> built in $((SECONDS - start))s"
  fi
  for spec in "$@"; do
    local pkg=${spec%%=*} link=${spec#*=}
    [ "$link" = "$spec" ] && link=$(binname "$pkg")
    [ -x "$out/$(binname "$pkg")" ] || { echo "!! $out/$(binname "$pkg") is missing after the build" >&2; exit 1; }
    ln -sfn "$out/$(binname "$pkg")" "$bin/$link"
  done
}

if [ "${1:-}" = lint ]; then
  lint_dir="$root/hack/tools/lint"
  kal=$(version_of "$lint_dir" sigs.k8s.io/kube-api-linter)
  build lint "$lint_dir" "$(version_of "$lint_dir" github.com/golangci/golangci-lint/v2)-kal-${kal##*-}" \
    sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter=golangci-lint
  exit 0
fi

# postgres: Debian's postgresql-15 and the libraries its server links that
# a slim Debian system may lack, fetched with `apt-get download` (no root
# needed) and unpacked with `dpkg-deb -x` into .cache/tools/postgres/root.
# Nothing is installed; test/pgserver runs the unpacked binaries with
# LD_LIBRARY_PATH pointing into the same tree. libllvm (JIT) is left out:
# the tests run the server with jit=off. Skipped when the stamp is there.
postgres_packages=(postgresql-15 libpq5 libicu72 libxml2 libldap-2.5-0 libsasl2-2 libsasl2-modules-db
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2 libssl3 liblz4-1 libzstd1)
if [ "${1:-}" = postgres ]; then
  pg="$cache/postgres"
  if [ -f "$pg/stamp" ] && [ "$(cat "$pg/stamp")" = "${postgres_packages[*]}" ]; then
    echo ">> PostgreSQL ready in $pg/root"
    exit 0
  fi
  echo ">> fetching PostgreSQL from Debian's packages: ${postgres_packages[*]}"
  start=$SECONDS
  rm -rf "$pg"
  mkdir -p "$pg/debs" "$pg/root"
  # The directory is writable by everyone for the download only, so that
  # apt's unprivileged download user can write there when this runs as root.
  chmod 1777 "$pg/debs"
  # A fresh machine may have no package lists yet: as root, fetch them
  # once and try again; otherwise say what to run.
  if ! (cd "$pg/debs" && apt-get download -q "${postgres_packages[@]}"); then
    if [ "$(id -u)" = 0 ]; then
      echo ">> fetching Debian's package lists (apt-get update) and trying again"
      apt-get update -q >/dev/null
    fi
    (cd "$pg/debs" && apt-get download -q "${postgres_packages[@]}") || {
      echo "!! apt-get download failed: it needs Debian's package lists (run apt-get update once, as root)" >&2
      rm -rf "$pg"; exit 1; }
  fi
  chmod 755 "$pg/debs"
  for deb in "$pg"/debs/*.deb; do dpkg-deb -x "$deb" "$pg/root"; done
  rm -rf "$pg/debs"
  [ -x "$pg"/root/usr/lib/postgresql/15/bin/postgres ] || { echo "!! no postgres binary after unpacking" >&2; exit 1; }
  echo "${postgres_packages[*]}" >"$pg/stamp"
  echo ">> PostgreSQL ready in $pg/root, in $((SECONDS - start))s"
  exit 0
fi

# prometheus: Debian's prometheus package, fetched with `apt-get download`
# and unpacked with `dpkg-deb -x` into .cache/tools/prometheus/root, the
# same way as postgres above. Only the server and promtool are used (they
# link nothing but libc), so its web-UI dependencies are left out. Nothing
# is installed; test/promserver runs the unpacked server on loopback for
# the dashboard's test, and the chart's test runs promtool on its alerts.
# Skipped when the stamp is there.
prometheus_packages=(prometheus)
if [ "${1:-}" = prometheus ]; then
  pm="$cache/prometheus"
  if [ -f "$pm/stamp" ] && [ "$(cat "$pm/stamp")" = "${prometheus_packages[*]}" ]; then
    echo ">> Prometheus ready in $pm/root"
    exit 0
  fi
  echo ">> fetching Prometheus from Debian's packages: ${prometheus_packages[*]}"
  start=$SECONDS
  rm -rf "$pm"
  mkdir -p "$pm/debs" "$pm/root"
  chmod 1777 "$pm/debs"
  if ! (cd "$pm/debs" && apt-get download -q "${prometheus_packages[@]}"); then
    if [ "$(id -u)" = 0 ]; then
      echo ">> fetching Debian's package lists (apt-get update) and trying again"
      apt-get update -q >/dev/null
    fi
    (cd "$pm/debs" && apt-get download -q "${prometheus_packages[@]}") || {
      echo "!! apt-get download failed: it needs Debian's package lists (run apt-get update once, as root)" >&2
      rm -rf "$pm"; exit 1; }
  fi
  chmod 755 "$pm/debs"
  for deb in "$pm"/debs/*.deb; do dpkg-deb -x "$deb" "$pm/root"; done
  rm -rf "$pm/debs"
  [ -x "$pm"/root/usr/bin/prometheus ] || { echo "!! no prometheus binary after unpacking" >&2; exit 1; }
  [ -x "$pm"/root/usr/bin/promtool ] || { echo "!! no promtool after unpacking" >&2; exit 1; }
  ln -sfn ../prometheus/root/usr/bin/prometheus "$bin/prometheus"
  echo "${prometheus_packages[*]}" >"$pm/stamp"
  echo ">> Prometheus ready in $pm/root, in $((SECONDS - start))s"
  exit 0
fi

# unpack_closure DIR PACKAGE...: the packages an install of PACKAGE...
# would add to this system (apt's simulated install: that closure, and
# nothing the system already has), fetched with `apt-get download` and
# unpacked with `dpkg-deb -x` into DIR/root. Nothing is installed.
unpack_closure() {
  local dir=$1; shift
  closure() { apt-get install -s -q --no-install-recommends "$@" 2>/dev/null | awk '$1 == "Inst" { print $2 }'; }
  local pkgs
  pkgs=$(closure "$@") || true
  # A fresh machine may have no package lists yet: as root, fetch them
  # once and ask again; otherwise say what to run.
  if [ -z "$pkgs" ] && [ "$(id -u)" = 0 ]; then
    echo ">> fetching Debian's package lists (apt-get update) and asking again"
    apt-get update -q >/dev/null
    pkgs=$(closure "$@") || true
  fi
  [ -n "$pkgs" ] || { echo "!! apt cannot resolve $*: it needs Debian's package lists (run apt-get update once, as root)" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$dir/debs" "$dir/root"
  # Writable by everyone for the download only, for apt's download user.
  chmod 1777 "$dir/debs"
  # shellcheck disable=SC2086 # one package name a word
  (cd "$dir/debs" && apt-get download -q $pkgs >/dev/null) || { echo "!! apt-get download failed" >&2; rm -rf "$dir"; exit 1; }
  chmod 755 "$dir/debs"
  echo ">> $(echo "$pkgs" | wc -l) packages, $(du -sh "$dir/debs" | cut -f1) downloaded; unpacking"
  for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
  rm -rf "$dir/debs"
}

# barbican: OpenStack Barbican and Keystone for the Barbican provider's
# tests, from Debian's packages. apt is asked which packages installing
# barbican-api, keystone and waitress (the WSGI server test/barbicanserver
# runs them in) would add to this system: that closure, and nothing the
# system already has, is fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` into .cache/tools/barbican/root. Nothing is installed:
# test/barbicanserver runs the system python3 with PYTHONPATH into that
# tree. Skipped when the stamp is there.
barbican_packages=(barbican-api keystone python3-waitress)
if [ "${1:-}" = barbican ]; then
  bb="$cache/barbican"
  if [ -f "$bb/stamp" ] && [ "$(cat "$bb/stamp")" = "${barbican_packages[*]}" ]; then
    echo ">> Barbican and Keystone ready in $bb/root"
    exit 0
  fi
  echo ">> fetching Barbican and Keystone from Debian's packages: ${barbican_packages[*]} and what they need"
  start=$SECONDS
  unpack_closure "$bb" "${barbican_packages[@]}"
  for mod in barbican keystone waitress; do
    [ -d "$bb/root/usr/lib/python3/dist-packages/$mod" ] || { echo "!! no $mod module after unpacking" >&2; exit 1; }
  done
  echo "${barbican_packages[*]}" >"$bb/stamp"
  echo ">> Barbican and Keystone ready in $bb/root ($(du -sh "$bb/root" | cut -f1)), in $((SECONDS - start))s"
  exit 0
fi

# ldap: Debian's slapd (OpenLDAP) for the Vault provider's LDAP login
# test, and the libraries it needs that this system lacks (apt's simulated
# install says which), fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` into .cache/tools/ldap/root, as for barbican above.
# Nothing is installed and no package script runs: test/ldapserver starts
# the unpacked slapd on loopback with a temporary configuration of its
# own. Skipped when the stamp is there.
ldap_packages=(slapd)
if [ "${1:-}" = ldap ]; then
  ld="$cache/ldap"
  if [ -f "$ld/stamp" ] && [ "$(cat "$ld/stamp")" = "${ldap_packages[*]}" ]; then
    echo ">> OpenLDAP ready in $ld/root"
    exit 0
  fi
  echo ">> fetching OpenLDAP from Debian's packages: ${ldap_packages[*]} and what it needs"
  start=$SECONDS
  unpack_closure "$ld" "${ldap_packages[@]}"
  [ -x "$ld"/root/usr/sbin/slapd ] || { echo "!! no slapd after unpacking" >&2; exit 1; }
  [ -f "$ld"/root/usr/lib/ldap/back_mdb.so ] || { echo "!! no back_mdb module after unpacking" >&2; exit 1; }
  echo "${ldap_packages[*]}" >"$ld/stamp"
  echo ">> OpenLDAP ready in $ld/root ($(du -sh "$ld/root" | cut -f1)), in $((SECONDS - start))s"
  exit 0
fi

# node: what a real single-node cluster needs besides the control plane:
# kubelet, kube-scheduler and kube-proxy from the same k8s.io/kubernetes
# module as kube-apiserver, and Debian's containerd, runc, CNI plugins and
# iptables (with the libraries this system lacks), fetched with `apt-get
# download` and unpacked with `dpkg-deb -x` into .cache/tools/node/root, as
# for barbican above. Nothing is installed: test/node runs the unpacked
# binaries with PATH and LD_LIBRARY_PATH pointing into that tree. Running
# the node needs root; fetching and building do not.
node_packages=(containerd runc containernetworking-plugins iptables)
if [ "${1:-}" = node ]; then
  kube_dir="$root/hack/tools/kube"
  build kube "$kube_dir" "$(version_of "$kube_dir" k8s.io/kubernetes)" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
  nd="$cache/node"
  if [ -f "$nd/stamp" ] && [ "$(cat "$nd/stamp")" = "${node_packages[*]}" ]; then
    echo ">> containerd, runc, CNI plugins and iptables ready in $nd/root"
    exit 0
  fi
  echo ">> fetching ${node_packages[*]} from Debian's packages, and what they need"
  start=$SECONDS
  unpack_closure "$nd" "${node_packages[@]}"
  for f in usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/bin/ctr usr/sbin/runc usr/lib/cni/bridge usr/lib/cni/host-local usr/lib/cni/loopback usr/sbin/xtables-nft-multi; do
    [ -x "$nd/root/$f" ] || { echo "!! no $f after unpacking" >&2; exit 1; }
  done
  echo "${node_packages[*]}" >"$nd/stamp"
  echo ">> containerd, runc, CNI plugins and iptables ready in $nd/root, in $((SECONDS - start))s"
  exit 0
fi

if [ "${1:-}" = proto ]; then
  proto_dir="$root/hack/tools/proto"
  build buf "$proto_dir" "$(version_of "$proto_dir" github.com/bufbuild/buf)" github.com/bufbuild/buf/cmd/buf
  exit 0
fi

if [ "${1:-}" = refdocs ]; then
  refdocs_dir="$root/hack/tools/refdocs"
  build refdocs "$refdocs_dir" "$(version_of "$refdocs_dir" github.com/elastic/crd-ref-docs)" github.com/elastic/crd-ref-docs
  exit 0
fi

if [ "${1:-}" = helm ]; then
  helm_dir="$root/hack/tools/helm"
  build helm "$helm_dir" "$(version_of "$helm_dir" helm.sh/helm/v3)" helm.sh/helm/v3/cmd/helm
  exit 0
fi

kube_dir="$root/hack/tools/kube"
etcd_dir="$root/hack/tools/etcd"
build kube "$kube_dir" "$(version_of "$kube_dir" k8s.io/kubernetes)" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
build etcd "$etcd_dir" "$(version_of "$etcd_dir" go.etcd.io/etcd/server/v3)" go.etcd.io/etcd/server/v3=etcd
if [ "${1:-}" = vault ]; then
  vault_dir="$root/hack/tools/vault"
  build vault "$vault_dir" "$(version_of "$vault_dir" github.com/hashicorp/vault)" github.com/hashicorp/vault
fi
echo ">> tools ready in $bin"
