//! `-json` (a gridspool extension): parsed, and compared with `-xml` of the same cell.

use crate::qrsh::cell;
use crate::sched::{SchedD, wait_for};
use crate::support::*;
use serde_json::Value;
use std::time::Duration;

/// The text of every `<tag>` in `xml`, in order.
fn xml_values(xml: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    xml.split(&open)
        .skip(1)
        .filter_map(|rest| rest.split(&format!("</{tag}>")).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn qstat_json_holds_what_qstat_xml_shows() {
    let Some(user) = user1() else {
        return skip(
            "qstat_json_holds_what_qstat_xml_shows",
            "needs the test users",
        );
    };
    let cell = cell(1);
    let _d = SchedD::start(&cell, &[]);
    for args in [
        &["-b", "y", "-N", "runs", "sleep", "60"][..],
        &["-b", "y", "-N", "waits", "sleep", "60"],
        &["-b", "y", "-N", "array", "-t", "1-3", "sleep", "60"],
    ] {
        let run = cell.run(&user, "qsub", args);
        assert_eq!(run.code, 0, "{run:?}");
    }
    wait_for("a job runs", Duration::from_secs(20), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    for extra in [&[][..], &["-f"], &["-ext", "-urg", "-pri"]] {
        let mut args = vec!["-u", "*"];
        args.extend(extra);
        let xml = cell.run(&user, "qstat", &[&args[..], &["-xml"]].concat());
        let json = cell.run(&user, "qstat", &[&args[..], &["-json"]].concat());
        assert_eq!(json.code, 0, "{json:?}");
        let v: Value = serde_json::from_str(&json.stdout).expect("qstat -json is JSON");
        let jobs = v["jobs"].as_array().expect("jobs");
        let field = |name: &str| -> Vec<String> {
            jobs.iter()
                .map(|j| match &j[name] {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect()
        };
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(
            sorted(field("job")),
            sorted(xml_values(&xml.stdout, "JB_job_number")),
            "{extra:?}"
        );
        // A job's state, not a queue instance's (`-f` has both).
        let job_states: Vec<String> = xml
            .stdout
            .split("<job_list")
            .skip(1)
            .filter_map(|b| b.split("</job_list>").next())
            .flat_map(|b| xml_values(b, "state"))
            .collect();
        assert_eq!(sorted(field("state")), sorted(job_states), "{extra:?}");
        assert_eq!(
            sorted(field("name")),
            sorted(xml_values(&xml.stdout, "JB_name"))
        );
        assert_eq!(
            sorted(field("owner")),
            sorted(xml_values(&xml.stdout, "JB_owner"))
        );
        assert_eq!(
            sorted(
                field("task")
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect()
            ),
            sorted(xml_values(&xml.stdout, "tasks"))
        );
        if extra.contains(&"-f") {
            let queues: Vec<String> = v["queues"]
                .as_array()
                .expect("queues")
                .iter()
                .map(|q| q["name"].as_str().unwrap_or_default().to_string())
                .collect();
            assert_eq!(queues, xml_values(&xml.stdout, "name"));
        }
        if extra.contains(&"-ext") {
            assert!(jobs.iter().all(|j| j["tickets"].is_number()), "{v}");
        }
    }
    // -j job_list: every line of `qstat -j` a field, of each job named (the waiting one's
    // scheduling info among them).
    let text = cell.run(&user, "qstat", &["-j", "1,2"]);
    let json = cell.run(&user, "qstat", &["-json", "-j", "1,2"]);
    assert_eq!(json.code, 0, "{json:?}");
    let v: Value = serde_json::from_str(&json.stdout).expect("qstat -j -json is JSON");
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(
        (
            jobs[0]["job_number"].as_str(),
            jobs[1]["job_number"].as_str()
        ),
        (Some("1"), Some("2"))
    );
    assert_eq!(jobs[1]["job_name"], "waits");
    for line in text.stdout.lines().filter(|l| !l.starts_with([' ', '='])) {
        let Some((label, value)) = line.split_once(':') else {
            continue;
        };
        let key = label.split_whitespace().collect::<Vec<_>>().join("_");
        let value = value.trim();
        let found = jobs.iter().any(|j| match &j[&key] {
            Value::String(s) => s == value,
            Value::Array(list) => list.iter().any(|x| x == value),
            _ => false,
        });
        assert!(found, "{key}: {value} not in {v}");
    }
    // Refused where it has no meaning: -j without a list, or with -xml.
    let run = cell.run(&user, "qstat", &["-json", "-j"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = cell.run(&user, "qstat", &["-json", "-xml", "-j", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn qacct_json_holds_what_qacct_shows() {
    let Some(user) = user1() else {
        return skip("qacct_json_holds_what_qacct_shows", "needs the test users");
    };
    let cell = cell(1);
    let _d = SchedD::start(&cell, &[]);
    for code in ["3", "0"] {
        let run = cell.run(
            &user,
            "qsub",
            &[
                "-b",
                "y",
                "-shell",
                "no",
                "-N",
                "acct",
                "sh",
                "-c",
                &format!("sleep 1; exit {code}"),
            ],
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    wait_for("both jobs accounted", Duration::from_secs(30), || {
        cell.run(&user, "qacct", &["-j", "acct"])
            .stdout
            .matches("jobnumber")
            .count()
            == 2
    });
    let text = cell.run(&user, "qacct", &["-j", "acct"]);
    let json = cell.run(&user, "qacct", &["-j", "acct", "-json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let records: Vec<Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(records.len(), 2, "{}", json.stdout);
    let shown = |field: &str| -> Vec<String> {
        text.stdout
            .lines()
            .filter_map(|l| l.strip_prefix(field))
            .map(|v| v.trim().to_string())
            .collect()
    };
    let numbers: Vec<String> = records
        .iter()
        .map(|r| r["job_number"].to_string())
        .collect();
    assert_eq!(numbers, shown("jobnumber"));
    let statuses: Vec<String> = records
        .iter()
        .map(|r| r["exit_status"].to_string())
        .collect();
    assert_eq!(statuses, shown("exit_status"));
    assert!(records.iter().all(|r| r["owner"] == user.name.as_str()));
    // Totals: the same as the table's (`qacct -o`).
    let table = cell.run(&user, "qacct", &["-o", &user.name]);
    let totals = cell.run(&user, "qacct", &["-o", &user.name, "-json"]);
    let v: Value = serde_json::from_str(&totals.stdout).expect("JSON");
    let groups = v["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 1, "{v}");
    assert_eq!(groups[0]["owner"], user.name.as_str());
    let wallclock = table
        .stdout
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|w| w.parse::<f64>().ok())
        .expect("the table's wallclock");
    assert_eq!(
        groups[0]["totals"]["wallclock"].as_f64(),
        Some(wallclock),
        "{}",
        table.stdout
    );
}

#[test]
fn qhost_json_holds_what_qhost_xml_shows() {
    let Some(user) = user1() else {
        return skip(
            "qhost_json_holds_what_qhost_xml_shows",
            "needs the test users",
        );
    };
    let cell = cell(1);
    let _d = SchedD::start(&cell, &[]);
    let xml = cell.run(&user, "qhost", &["-q", "-F", "-xml"]);
    let json = cell.run(&user, "qhost", &["-q", "-F", "-json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let v: Value = serde_json::from_str(&json.stdout).expect("qhost -json is JSON");
    let hosts = v["hosts"].as_array().expect("hosts");
    let host = gridspool::identity::short_hostname();
    assert_eq!(hosts.len(), 1, "{v}");
    let h = &hosts[0];
    assert_eq!(h["name"], host.as_str());
    // The values -xml shows, in the units -json documents.
    let block = xml
        .stdout
        .split(&format!("<host name='{host}'>"))
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let xml_value = |name: &str| -> String {
        block
            .lines()
            .find(|l| l.contains(&format!("<hostvalue name='{name}'>")))
            .and_then(|l| l.split('>').nth(1))
            .and_then(|l| l.split('<').next())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(h["num_proc"].to_string(), xml_value("num_proc"));
    assert_eq!(h["arch"], xml_value("arch_string").as_str());
    let queues = h["queues"].as_array().expect("queues");
    assert_eq!(queues.len(), 1);
    assert_eq!(queues[0]["name"], "all.q");
    assert_eq!(queues[0]["slots_total"], 1);
    let resources = h["resources"].as_object().expect("-F resources");
    assert!(resources.contains_key("hl:load_avg"), "{v}");
    assert_eq!(
        resources.len(),
        xml.stdout.matches("<resourcevalue").count(),
        "{}",
        xml.stdout
    );
    // -j: a running job under its queue instance, as -xml lists it.
    let run = cell.run(&user, "qsub", &["-b", "y", "-N", "held", "sleep", "60"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the job runs", Duration::from_secs(20), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    let xml = cell.run(&user, "qhost", &["-j", "-xml"]);
    let json = cell.run(&user, "qhost", &["-j", "-json"]);
    let v: Value = serde_json::from_str(&json.stdout).expect("qhost -j -json is JSON");
    let jobs = v["hosts"][0]["queues"][0]["jobs"]
        .as_array()
        .expect("the instance's jobs");
    assert_eq!(jobs.len(), 1, "{v}");
    let job = &jobs[0];
    assert_eq!(
        (
            job["name"].as_str(),
            job["owner"].as_str(),
            job["master"].as_str()
        ),
        (Some("held"), Some(user.name.as_str()), Some("MASTER"))
    );
    assert!(
        xml.stdout
            .contains(&format!(" <job name='{}'>", job["job"])),
        "{}",
        xml.stdout
    );
    assert!(
        xml.stdout
            .contains(&format!("name='start_time'>{}</jobvalue>", job["started"])),
        "{}",
        xml.stdout
    );
}

#[test]
fn qconf_show_forms_as_json() {
    let Some(user) = user1() else {
        return skip("qconf_show_forms_as_json", "needs the test users");
    };
    let cell = cell(1);
    let host = gridspool::identity::short_hostname();
    let run = cell.run(&user, "qconf", &["-sql", "-json"]);
    assert_eq!(run.stdout, "[\"all.q\"]\n", "{run:?}");
    let run = cell.run(&user, "qconf", &["-sel", "-json"]);
    assert_eq!(run.stdout, format!("[\"{host}\"]\n"), "{run:?}");
    // The queue as an object of the text form's values.
    let text = cell.run(&user, "qconf", &["-sq", "all.q"]);
    let json = cell.run(&user, "qconf", &["-sq", "all.q", "-json"]);
    let v: Value = serde_json::from_str(&json.stdout).expect("JSON");
    let q = v.as_object().expect("one object");
    assert_eq!(q["qname"], "all.q");
    assert_eq!(q["slots"], "1");
    let keys = text
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.trim().is_empty())
        .count();
    assert_eq!(q.len(), keys, "{}", text.stdout);
    // An error stays SGE's, on stderr.
    let run = cell.run(&user, "qconf", &["-sq", "nosuch.q", "-json"]);
    assert_eq!((run.stdout.as_str(), run.code), ("", 1), "{run:?}");
}
