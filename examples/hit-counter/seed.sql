INSERT INTO page_hits (day, hits) VALUES ('2026-06-01', 0);
