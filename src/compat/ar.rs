//! What SGE users see of advance reservations: who may make one (`qrsub`), who may use
//! one (`qsub -ar`, the `-u` list), in SGE 8.1.9's words.

use crate::config::ClusterConfig;
use crate::model::ArRecord;

/// The access list whose members may submit reservations (`sge_ar(5)`, `qrsub(1)`).
pub const AR_USERS_ACL: &str = "arusers";

/// Whether `user`, whose primary group is `group`, is in the access list `acl`
/// (`access_list(5)`), `None` when the cell has no such list. Every `@acl` of a reservation
/// (`qrsub -u`) and the `arusers` check of `qrsub` come through here.
pub fn access_list_contains(
    config: &ClusterConfig,
    acl: &str,
    user: &str,
    group: &str,
) -> Option<bool> {
    Some(config.access_list(acl)?.contains(user, group))
}

/// Whether `user` may submit a reservation: an operator or manager, or a member of
/// `arusers` (one of the lists every cell has), as in SGE (`qrsub(1)`).
pub fn may_reserve(
    config: &ClusterConfig,
    user: &str,
    group: &str,
    uid: u32,
) -> Result<(), String> {
    if config.is_operator(user, uid) {
        return Ok(());
    }
    match access_list_contains(config, AR_USERS_ACL, user, group) {
        Some(false) => Err(format!(
            "denied: \"{user}\" must be manager or in userset \"{AR_USERS_ACL}\""
        )),
        Some(true) | None => Ok(()),
    }
}

/// Whether `user` (of primary group `group`) may submit jobs into `ar` (its `-u` list,
/// `@acl` entries resolved by [`access_list_contains`]).
pub fn may_use(config: &ClusterConfig, ar: &ArRecord, user: &str, group: &str, uid: u32) -> bool {
    ar.admits(user, uid, &|acl, u| {
        access_list_contains(config, acl, u, group).unwrap_or(false)
    })
}

/// `HH:MM:SS` of a duration, as qrstat prints it.
fn hms(secs: i64) -> String {
    let s = secs.max(0);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// `qrstat`'s list: a header and one line per reservation (none: nothing at all).
pub fn list(ars: &[ArRecord]) -> String {
    use crate::time::qstat_date;
    if ars.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{:<7} {:<10} {:<12} {:<5} {:<20} {:<20} duration\n{}\n",
        "ar-id",
        "name",
        "owner",
        "state",
        "start at",
        "end at",
        "-".repeat(90)
    );
    for r in ars {
        let s = &r.submission;
        out.push_str(&format!(
            "{:>7} {:<10} {:<12} {:<5} {:<20} {:<20} {}\n",
            s.id,
            s.name.as_deref().unwrap_or(""),
            s.owner.user,
            r.state.letter(),
            qstat_date(s.start),
            qstat_date(s.end),
            hms(s.duration())
        ));
    }
    out
}

/// `qrstat -ar ID`: the reservation's attributes, one per line.
pub fn detail(r: &ArRecord) -> String {
    use crate::time::qstat_date;
    let s = &r.submission;
    let mut out = format!("{}\n", "-".repeat(80));
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<31}{v}\n"));
    line("id", s.id.to_string());
    if let Some(n) = &s.name {
        line("name", n.clone());
    }
    line("owner", s.owner.user.clone());
    line("state", r.state.letter().to_string());
    line("start_time", qstat_date(s.start));
    line("end_time", qstat_date(s.end));
    line("duration", hms(s.duration()));
    for m in &r.messages {
        line("message", m.clone());
    }
    line("submission_time", qstat_date(s.submission_time));
    line("group", s.owner.group.clone());
    line("account", s.account.clone().unwrap_or_else(|| "sge".into()));
    if !s.resources.is_empty() {
        let list: Vec<String> = s
            .resources
            .iter()
            .map(|r| format!("{}={}", r.name, r.value))
            .collect();
        line("resource_list", list.join(","));
    }
    let granted: Vec<String> = r
        .granted
        .iter()
        .map(|g| format!("{}={}", g.instance(), g.slots))
        .collect();
    line("granted_slots_list", granted.join(","));
    if let Some(pe) = &r.granted_pe {
        let slots: u32 = r.granted.iter().map(|g| g.slots).sum();
        line(
            "granted_parallel_environment",
            format!("{pe} slots {slots}"),
        );
    }
    if !s.users.is_empty() {
        line("acl_list", s.users.join(","));
    }
    if !s.mail_options.is_empty() {
        line("mail_options", s.mail_options.clone());
    }
    if !s.mail_list.is_empty() {
        line("mail_list", s.mail_list.join(","));
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `qrstat -xml` (`full`: `-ar`, with the detail's attributes).
pub fn xml(ars: &[ArRecord], full: bool) -> String {
    use crate::time::xml_date;
    let mut out = String::from(
        "<?xml version='1.0'?>\n<qrstat xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qrstat/qrstat.xsd\">\n",
    );
    for r in ars {
        let s = &r.submission;
        out.push_str("   <ar_summary>\n");
        let mut tag = |k: &str, v: String| {
            out.push_str(&format!("      <{k}>{}</{k}>\n", xml_escape(&v)));
        };
        tag("id", s.id.to_string());
        if let Some(n) = &s.name {
            tag("name", n.clone());
        }
        tag("owner", s.owner.user.clone());
        tag("state", r.state.letter().to_string());
        tag("start_time", xml_date(s.start));
        tag("end_time", xml_date(s.end));
        tag("duration", hms(s.duration()));
        if full {
            for m in &r.messages {
                tag("message", m.clone());
            }
        }
        if full {
            tag("submission_time", xml_date(s.submission_time));
            tag("group", s.owner.group.clone());
            tag("account", s.account.clone().unwrap_or_else(|| "sge".into()));
            out.push_str("      <granted_slots_list>\n");
            for g in &r.granted {
                out.push_str(&format!(
                    "         <granted_slots  queue_instance=\"{}\" slots=\"{}\"/>\n",
                    xml_escape(&g.instance()),
                    g.slots
                ));
            }
            out.push_str("      </granted_slots_list>\n");
        }
        out.push_str("   </ar_summary>\n");
    }
    out.push_str("</qrstat>\n");
    out
}
