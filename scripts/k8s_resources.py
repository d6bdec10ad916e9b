"""Lists the manifests a kustomization builds from, for scripts/validate-k8s.sh: the files under
`resources:` of deploy/k8s/kustomization.yaml and of every component it may use, one path per line.
Those are whole Kubernetes objects, checked against the schemas; kustomizations and patches are not
objects (only linted). Fails, naming it, when a file a kustomization refers to is missing (the gossip
key excepted: each user makes their own with `ftlctl keygen`).

With --enable-components FOLDER it instead turns every optional component (a subfolder whose
kustomization is a Component) on in FOLDER/kustomization.yaml, so that the script can render the job
with all of them; it is meant for a copy of deploy/k8s (it rewrites the file, dropping its comments)."""

import os
import sys

import yaml

USER_MADE = {"gossip-key"}


def referenced(kustomization):
    """(resources, every other file it refers to) of one kustomization, relative to its folder."""
    resources = list(kustomization.get("resources", []))
    others = [p["path"] for p in kustomization.get("patches", []) if "path" in p]
    for generator in kustomization.get("configMapGenerator", []) + kustomization.get("secretGenerator", []):
        others += generator.get("envs", []) + generator.get("files", [])
    return resources, others


def walk(folder, seen):
    """Resource files of the kustomization in folder and of its components (commented-out ones too:
    every component in a subfolder with a kustomization.yaml)."""
    with open(os.path.join(folder, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    resources, others = referenced(kustomization)
    for name in others:
        path = os.path.join(folder, name)
        if name not in USER_MADE and not os.path.exists(path):
            sys.exit(f"k8s_resources: {folder}/kustomization.yaml refers to {name}, which does not exist")
    files = []
    for name in resources:
        path = os.path.normpath(os.path.join(folder, name))
        if os.path.isdir(path):
            if path not in seen:
                seen.add(path)
                files += walk(path, seen)
        elif not os.path.exists(path):
            sys.exit(f"k8s_resources: {folder}/kustomization.yaml lists {name}, which does not exist")
        else:
            files.append(path)
    for entry in sorted(os.listdir(folder)):
        sub = os.path.join(folder, entry)
        if os.path.isfile(os.path.join(sub, "kustomization.yaml")) and sub not in seen:
            seen.add(sub)
            files += walk(sub, seen)
    return files


def enable_components(folder):
    path = os.path.join(folder, "kustomization.yaml")
    with open(path) as f:
        kustomization = yaml.safe_load(f)
    components = []
    for entry in sorted(os.listdir(folder)):
        sub = os.path.join(folder, entry, "kustomization.yaml")
        if os.path.isfile(sub):
            with open(sub) as f:
                if yaml.safe_load(f).get("kind") == "Component":
                    components.append(entry)
    kustomization["components"] = components
    with open(path, "w") as f:
        yaml.safe_dump(kustomization, f, sort_keys=False)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--enable-components"]:
        enable_components(sys.argv[2])
        sys.exit(0)
    root = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else "deploy/k8s")
    print("\n".join(walk(root, {root})))
