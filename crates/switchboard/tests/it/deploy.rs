//! The deployment kit under `deploy/kubernetes/` against the gateway it deploys: the
//! kustomization renders offline (`kubectl kustomize`), its probes' paths answer without a
//! key on a gateway running the very configuration it mounts, the Pod's grace period
//! outlasts that configuration's drain, and every secret the configuration names comes
//! from the Secret. (The container recipe's final stage is built and run by
//! `scripts/container check`, which `.ci/run` runs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use switchboard_server::Config;
use switchboard_testkit::peers::skip_or_fail;

use crate::common::Served;

fn kit() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

/// The rendered objects, or `None` (after a SKIP line, or a failure where peers are
/// required) without `kubectl`.
fn rendered() -> Option<Vec<Value>> {
    let output = match Command::new("kubectl").arg("kustomize").arg(kit()).output() {
        Ok(output) => output,
        Err(error) => {
            skip_or_fail(
                "kubectl",
                &format!("{error}; install Debian's kubernetes-client (scripts/test does)"),
            );
            return None;
        }
    };
    assert!(
        output.status.success(),
        "kubectl kustomize failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // YAML to JSON through PyYAML (tests/requirements.txt), so the test reads plain values.
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(&output.stdout)
        .unwrap();
    let json = python.wait_with_output().unwrap();
    assert!(json.status.success());
    Some(serde_json::from_slice(&json.stdout).unwrap())
}

fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| {
            object["kind"] == kind
                && object["metadata"]["name"]
                    .as_str()
                    .is_some_and(|found| found.starts_with(name))
        })
        .unwrap_or_else(|| panic!("no {kind} {name} in the rendered kit"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kustomization_renders_and_agrees_with_the_gateway_it_deploys() {
    let Some(objects) = rendered() else { return };
    let deployment = object(&objects, "Deployment", "switchboard");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let config_map = object(&objects, "ConfigMap", "switchboard-config");
    let text = config_map["data"]["switchboard.toml"].as_str().unwrap();
    let config = Config::from_toml(text).unwrap();

    // The grace the kubelet gives outlasts the drain the configuration asks for.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        grace > config.shutdown_grace_secs,
        "terminationGracePeriodSeconds {grace} must exceed shutdown_grace_secs {}",
        config.shutdown_grace_secs
    );
    assert!(config.drain_idle_secs < config.shutdown_grace_secs);
    // The port the probes and the Service use is the one the configuration listens on.
    assert_eq!(
        container["ports"][0]["containerPort"].as_u64(),
        Some(u64::from(config.listen.port()))
    );
    // The mounted file is the one the container is told to read, and the characters' folder
    // the one the configuration names, from the characters' ConfigMap.
    let mounts = container["volumeMounts"].as_array().unwrap();
    let volume_of = |mount: &Value| {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|volume| volume["name"] == mount["name"])
            .unwrap()["configMap"]["name"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let file = mounts
        .iter()
        .find(|mount| mount["subPath"] == "switchboard.toml")
        .unwrap();
    assert_eq!(
        volume_of(file),
        config_map["metadata"]["name"].as_str().unwrap()
    );
    assert_eq!(
        container["args"],
        serde_json::json!(["--config", file["mountPath"]])
    );
    let characters_map = object(&objects, "ConfigMap", "switchboard-characters");
    let folder = mounts
        .iter()
        .find(|mount| volume_of(mount) == characters_map["metadata"]["name"].as_str().unwrap())
        .unwrap();
    let configured = config.characters.as_ref().unwrap();
    assert_eq!(folder["mountPath"].as_str(), configured.to_str());
    // Every secret the configuration reads from the environment is in the Secret.
    let secret = object(&objects, "Secret", "switchboard-secrets");
    assert_eq!(
        container["envFrom"][0]["secretRef"]["name"],
        secret["metadata"]["name"]
    );
    let provided = &secret["stringData"];
    assert!(provided["SWITCHBOARD_STATE"].is_string());
    for key in &config.keys {
        if let Some(variable) = &key.key_env {
            assert!(
                provided[variable.as_str()].is_string(),
                "{variable} is not in the Secret"
            );
        }
    }
    let pdb = object(&objects, "PodDisruptionBudget", "switchboard");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"]
    );

    // The same configuration, served here, with its characters laid out as the kubelet
    // mounts a ConfigMap (each file a link into a hidden `..data` folder): the probes
    // answer without a key, the API asks for one, the ConfigMap's characters are served.
    let dir = tempfile::tempdir().unwrap();
    let mounted = dir.path().join("characters");
    std::fs::create_dir_all(mounted.join("..data")).unwrap();
    for (name, source) in characters_map["data"].as_object().unwrap() {
        std::fs::write(mounted.join("..data").join(name), source.as_str().unwrap()).unwrap();
        std::os::unix::fs::symlink(format!("..data/{name}"), mounted.join(name)).unwrap();
    }
    let file = dir.path().join("switchboard.toml");
    std::fs::write(
        &file,
        text.replace(configured.to_str().unwrap(), mounted.to_str().unwrap()),
    )
    .unwrap();
    let key = "sk-sb-kit-5Tz8Qp3Wm6Yr1Lx9Vb4Nc7Hd2Gf0Js3";
    let served = Served::start(&file, "127.0.0.1:0", &[("SWITCHBOARD_KEY_APP", key)]);
    let client = reqwest::Client::new();
    for probe in ["readinessProbe", "livenessProbe"] {
        let path = container[probe]["httpGet"]["path"].as_str().unwrap();
        let status = client
            .get(format!("{}{path}", served.base))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "{probe} {path}");
    }
    let refused = client
        .get(format!("{}/v1/models", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let models = client
        .get(format!("{}/v1/models", served.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    let models: Value = models.json().await.unwrap();
    assert!(
        models.to_string().contains("character/front-desk"),
        "{models}\n{}",
        served.log()
    );
}
