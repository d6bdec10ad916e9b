#!/usr/bin/env bash
# Checks the Kubernetes manifests in deploy/k8s without a cluster: yamllint over every YAML file, then
# every object the kustomizations build from against the Kubernetes OpenAPI schemas (kubernetes-validate,
# strict: unknown fields are errors), and, where kubectl is installed, the objects `kubectl apply -k` would
# send: deploy/k8s rendered by `kubectl kustomize` as shipped and with every optional component on (the
# patches of checkpoints/, torch/ and gpu/ applied), and the Job form deploy/k8s-job. Both tools come from PyPI into a virtual environment under
# the build folder, so the system Python is left alone; once installed, the check runs offline (the schemas
# ship inside kubernetes-validate; kubectl kustomize needs no cluster).
#   scripts/validate-k8s.sh
# FTL_BUILD_DIR (default build) holds the venv; K8S_VERSIONS (default "1.30.0 1.37.0": an old cluster
# still in use and the newest schemas bundled) are the Kubernetes versions to validate against.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${FTL_BUILD_DIR:-build}/k8s-validate-venv"
read -r -a k8s_versions <<<"${K8S_VERSIONS:-1.30.0 1.37.0}"
if [ ! -x "$venv/bin/kubernetes-validate" ] || [ ! -x "$venv/bin/yamllint" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0 yamllint==1.38.0
fi

echo "== yamllint deploy/k8s"
"$venv/bin/yamllint" -s -c deploy/k8s/.yamllint.yaml deploy/k8s deploy/k8s-job

mapfile -t manifests < <("$venv/bin/python" scripts/k8s_resources.py deploy/k8s;
                         "$venv/bin/python" scripts/k8s_resources.py deploy/k8s-job | grep -v '^deploy/k8s/')
if command -v kubectl >/dev/null; then
  # A copy with a throwaway key: kustomize reads the Secret's file, and deploy/k8s is left as it is.
  rendered="$(mktemp -d)"
  trap 'rm -rf "$rendered"' EXIT
  cp -r deploy/k8s "$rendered/shipped"
  head -c 32 /dev/urandom | base64 >"$rendered/shipped/gossip-key"
  cp -r "$rendered/shipped" "$rendered/all-components"
  "$venv/bin/python" scripts/k8s_resources.py --enable-components "$rendered/all-components"
  # The Job form builds on deploy/k8s as a sibling folder (k8s-job/ -> ../k8s), as in the tree.
  mkdir "$rendered/job" && cp -r "$rendered/shipped" "$rendered/job/k8s" && cp -r deploy/k8s-job "$rendered/job/"
  for variant in shipped all-components job/k8s-job; do
    echo "== kubectl kustomize ($variant)"
    kubectl kustomize "$rendered/$variant" >"$rendered/${variant//\//-}.yaml"
    manifests+=("$rendered/${variant//\//-}.yaml")
  done
else
  echo "== kubectl not found: the rendered kustomizations are not checked (the files they build from are)"
fi
for version in "${k8s_versions[@]}"; do
  echo "== kubernetes-validate --strict, Kubernetes $version"
  "$venv/bin/kubernetes-validate" --strict -k "$version" "${manifests[@]}"
done
echo "validate-k8s: ${#manifests[@]} manifests valid for Kubernetes ${k8s_versions[*]}; every YAML file lint-clean"
