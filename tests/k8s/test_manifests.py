"""The Kubernetes manifests as kubectl would build them (kubectl kustomize, no cluster): what the pods ask
for matches the job's defaults, hot spares count as ready, the follow-replicas sidecar has what it needs (the
run directory, a service account with its Role), and the Job form runs the Deployment's pod less the sidecar.
Skipped (exit 77) without kubectl or PyYAML. One scenario per run: python3 test_manifests.py SCENARIO."""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def render(tmp, folder, components=()):
    """The objects `kubectl apply -k` would send for deploy/<folder>, with these components on."""
    import yaml
    work = os.path.join(tmp, "deploy")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "deploy"), work)
    with open(os.path.join(work, "k8s", "gossip-key"), "w") as f:
        f.write("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
    if components:
        path = os.path.join(work, "k8s", "kustomization.yaml")
        with open(path) as f:
            k = yaml.safe_load(f)
        k["components"] = list(components)
        with open(path, "w") as f:
            yaml.safe_dump(k, f)
    out = subprocess.run(["kubectl", "kustomize", os.path.join(work, folder)], check=True, capture_output=True,
                         text=True).stdout
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(out) if o}


def worker(objects, kind="Deployment"):
    pod = objects[(kind, "ftl-worker")]["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == "worker")


def env_of(objects, container):
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    cm = next(o for (kind, _), o in objects.items() if kind == "ConfigMap")
    return dict(cm["data"], **{k: v for k, v in env.items() if v is not None})


def scenario_pods_request_a_gpu_only_with_the_gpu_component(tmp):
    shipped = render(tmp, "k8s")
    _, c = worker(shipped)
    res = c["resources"]
    assert "nvidia.com/gpu" not in res.get("requests", {}) and "nvidia.com/gpu" not in res.get("limits", {}), res
    assert env_of(shipped, c)["FTL_COMM"] == "tcp"
    assert c["readinessProbe"]["exec"]["command"] == ["ftlctl", "ready", "--spares"], c["readinessProbe"]
    print("shipped: no GPU requested, FTL_COMM=tcp, readiness `ftlctl ready --spares`")
    gpu = render(tmp, "k8s", components=["gpu"])
    _, c = worker(gpu)
    assert c["resources"]["requests"]["nvidia.com/gpu"] == 1 and c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert env_of(gpu, c)["FTL_COMM"] == "nccl"
    print("gpu component: one GPU per pod, FTL_COMM=nccl")


def scenario_torch_component_keeps_one_spare(tmp):
    base = render(tmp, "k8s")
    _, c = worker(base)
    assert env_of(base, c).get("FTL_SPARES") in (None, "0"), "the C example's pods start fast: no spare kept"
    torch = render(tmp, "k8s", components=["torch"])
    _, c = worker(torch)
    assert c["image"].endswith("ftl-torch") or "torch" in c["image"], c["image"]
    assert env_of(torch, c)["FTL_SPARES"] == "1"
    print("torch component: one pod waits as a hot spare (FTL_SPARES=1)")


def scenario_sidecar_follows_the_replicas_with_its_own_role(tmp):
    objects = render(tmp, "k8s")
    pod, c = worker(objects)
    side = next((x for x in pod["containers"] if x["name"] == "follow-replicas"), None)
    assert side is not None, "the Deployment's pod has no follow-replicas sidecar"
    assert side["command"][:2] == ["ftlctl", "follow-replicas"] and "ftl-worker" in side["command"], side["command"]
    assert side["image"] == c["image"], f"the sidecar runs {side['image']}, the worker {c['image']}"
    run = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}["run"]
    assert {"name": "run", "mountPath": run} in side["volumeMounts"], side["volumeMounts"]
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == "run"), "the run directory is not an emptyDir"
    env = env_of(objects, side)
    assert env["FTL_RUN_DIR"] == run == env_of(objects, c)["FTL_RUN_DIR"], (env.get("FTL_RUN_DIR"), run)
    names = {x["name"]: x.get("valueFrom") for x in side["env"] + c["env"] if x["name"] == "FTL_NAME"}
    assert names["FTL_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}, names
    assert side["resources"]["requests"]["cpu"] == "10m", side["resources"]
    assert pod["serviceAccountName"] == "ftl-worker", pod.get("serviceAccountName")
    assert ("ServiceAccount", "ftl-worker") in objects, "no ServiceAccount ftl-worker"
    role = objects[("Role", "ftl-follow-replicas")]
    assert role["rules"] == [{"apiGroups": ["apps"], "resources": ["deployments/scale"],
                              "resourceNames": ["ftl-worker"], "verbs": ["get"]}], role["rules"]
    binding = objects[("RoleBinding", "ftl-follow-replicas")]
    assert binding["roleRef"]["name"] == "ftl-follow-replicas", binding["roleRef"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ftl-worker"}], binding["subjects"]
    print(f"sidecar follow-replicas shares {run} with the worker; the pod runs as ftl-worker, which may get "
          "deployments/scale of ftl-worker and nothing else")
    torch = render(tmp, "k8s", components=["torch"])
    pod, c = worker(torch)
    side = next(x for x in pod["containers"] if x["name"] == "follow-replicas")
    assert side["image"] == c["image"] and env_of(torch, side)["FTL_SPARES"] == "1", (side["image"], side["env"])
    print("torch component: the sidecar runs the torch image and counts its spare (FTL_SPARES=1)")


def scenario_job_form_runs_the_deployments_pod(tmp):
    deployment = render(tmp, "k8s")
    job = render(tmp, "k8s-job")
    assert ("Deployment", "ftl-worker") not in job, "the Job form still has the Deployment"
    spec = job[("Job", "ftl-worker")]["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"], spec
    pod, _ = worker(job, "Job")
    assert pod.pop("restartPolicy") == "OnFailure"
    want = deployment[("Deployment", "ftl-worker")]["spec"]["template"]
    got = job[("Job", "ftl-worker")]["spec"]["template"]
    # less the follow-replicas sidecar: a Job has no replica count, and a container that runs on would keep
    # it from completing; without it the Role it needs is left out too
    want["spec"]["containers"] = [c for c in want["spec"]["containers"] if c["name"] != "follow-replicas"]
    assert got["metadata"] == want["metadata"] and pod == want["spec"], "the Job's pod differs from the Deployment's"
    assert not any(k in ("Role", "RoleBinding") for k, _ in job), "the Job form keeps follow-replicas' Role"
    for kind in ("Service", "PodDisruptionBudget", "Secret"):
        assert any(k == kind for k, _ in job), f"the Job form has no {kind}"
    print(f"Job form: Indexed, {spec['completions']} workers, the Deployment's pod with restartPolicy OnFailure")


def main():
    if shutil.which("kubectl") is None:
        print("SKIP: kubectl not installed")
        return 77
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("SKIP: PyYAML not installed")
        return 77
    name = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ftl-manifests-") as tmp:
        try:
            globals()["scenario_" + name](tmp)
        except AssertionError as e:
            print(f"FAIL {name}: {e}")
            return 1
    print(f"PASS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
