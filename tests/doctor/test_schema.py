"""The JSON report against tools/doctor/schema.json, and the validator itself."""
import copy
import json
import unittest

from helpers import doctor_json, fixture, fixture_copy, fixture_names, run_doctor

from doctor import schema_check

FIXTURES = fixture_names()


class Schema(unittest.TestCase):
    def test_schema_is_valid_json_with_version(self):
        schema = schema_check.load_schema()
        self.assertEqual(schema["properties"]["schema_version"]["const"], 1)

    def test_every_fixture_report_validates(self):
        for name in FIXTURES:
            for profile in ("reproducible", "throughput", "latency"):
                _, doc, _ = doctor_json("--root", fixture(name), "--profile", profile, "--app-cores", "0")
                self.assertEqual(schema_check.validate(doc), [], (name, profile))
                self.assertEqual(doc["schema_version"], 1)
                counts = doc["summary"]["counts"]
                self.assertEqual(sum(counts.values()), len(doc["findings"]))

    def test_during_report_validates(self):
        root = fixture_copy(self, "rps_off_hotcore")
        _, doc, _ = doctor_json("--root", root, "--during", "true")
        self.assertEqual(schema_check.validate(doc), [])
        self.assertEqual(set(doc["during"]), {"command", "exit_code", "seconds"})

    def test_findings_are_complete(self):
        for name in FIXTURES:
            _, doc, _ = doctor_json("--root", fixture(name), "--app-cores", "1")
            for f in doc["findings"]:
                what = (name, f["id"], f["subject"])
                self.assertTrue(f["why"].endswith("."), what)
                if f["severity"] in ("warn", "crit"):
                    self.assertTrue(f["fix"] or f["note"], what)     # something to do
                    self.assertTrue(f["recommended"], what)
                if f["fix"]:                                         # and how it lasts
                    self.assertTrue(f["persist"], what)
                    self.assertTrue(f["fix_kind"], what)

    def test_validator_catches_breakage(self):
        _, doc, _ = doctor_json("--root", fixture("noisy_host"))
        bad = copy.deepcopy(doc)
        del bad["summary"]
        bad["findings"][0]["severity"] = "fatal"
        bad["findings"][1]["extra"] = 1
        bad["host"]["ncpus"] = "four"
        errors = "\n".join(schema_check.validate(bad))
        for needle in ("missing 'summary'", "'fatal' not one of", "unexpected property 'extra'",
                       "$.host.ncpus: expected integer"):
            self.assertIn(needle, errors)

    def test_validate_subcommand_and_json_file(self):
        root = fixture_copy(self, "noisy_host")
        out_file = root + ".json"
        run_doctor("--root", root, "--json-file", out_file)
        rc, out, _ = run_doctor("validate", out_file)
        self.assertEqual(rc, 0, out)
        with open(out_file) as f:
            doc = json.load(f)
        doc["schema_version"] = 2
        with open(out_file, "w") as f:
            json.dump(doc, f)
        rc, out, _ = run_doctor("validate", out_file)
        self.assertEqual(rc, 1)
        self.assertIn("schema_version", out)


if __name__ == "__main__":
    unittest.main()
