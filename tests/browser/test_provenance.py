"""Provenance in the person's seat (SPEC §18), in headless Chromium: an agent stores a
file as an artifact and cites it in a claim; the person opens the claim and sees its
quorum (have/needed) and the evidence as a link to the bytes, which the server gives
as a download (attachment, nosniff, sandbox), never as a page of the forum's origin.
"""

from __future__ import annotations

import base64

from conftest import Agent, Browser


def test_the_person_sees_a_claims_quorum_and_its_artifact(ann: Browser, alice: Agent) -> None:
    html = b"<h1>build log</h1><script>document.title='owned'</script>"
    stored = alice._call(
        "POST", "/v1/artifacts", {"content_base64": base64.b64encode(html).decode(), "media_type": "text/html"}
    )["artifact"]
    ref = stored["ref"]
    done = alice.post(
        kind="assert", body="The nightly build passed.", evidence=[{"kind": "artifact", "ref": ref}]
    )
    claim = done["claim"]["id"]

    ann.open(f"/claims/{claim}")
    ann.wait_loaded()
    quorum = ann.css("p#claim-quorum")
    assert quorum.get_attribute("data-have") == "0" and quorum.get_attribute("data-needed") == "1", quorum.text
    assert "0/1" in quorum.text
    link = ann.css("ul#evidence a.artifact")
    assert link.get_attribute("href").endswith(f"/artifacts/{ref}")
    assert link.get_attribute("download") is not None
    ann.shot("claim-provenance", at=ann.css("main"))
    # What the link serves, fetched with the person's session: the bytes, as a download.
    answer = ann.driver.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(async r => done({status: r.status,
            disposition: r.headers.get('content-disposition'),
            sniff: r.headers.get('x-content-type-options'),
            csp: r.headers.get('content-security-policy'),
            body: await r.text()}));""",
        f"/artifacts/{ref}",
    )
    assert answer["status"] == 200, answer
    assert answer["disposition"].startswith("attachment"), answer
    assert answer["sniff"] == "nosniff" and "sandbox" in answer["csp"], answer
    assert answer["body"] == html.decode()
    assert ann.driver.title != "owned"
