CREATE TABLE page_hits (day date PRIMARY KEY, hits integer NOT NULL);
