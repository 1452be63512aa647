-- Shared mailbox tables (docs/reference/wire.md §1), MariaDB / MySQL.
--
-- For development and tests only: in production these tables belong to the
-- upstream and msgexchange never creates or alters them. The test harness
-- (test/harness/mx_testenv.c) runs this file into every fresh test database.

-- Inbound: the upstream writes, msgexchange reads and writes the processed mark.
CREATE TABLE IF NOT EXISTS CMINMSGS (
  CMINMSGS_ID                  BIGINT NOT NULL AUTO_INCREMENT,
  CMINMSGS_CLOB_MSG            MEDIUMTEXT NOT NULL,
  CMINMSGS_DATE_RECEIVED       DATETIME NULL,
  CMINMSGS_DATE_PROCESSED      DATETIME NULL,
  CMINMSGS_SUBSYSTEM_NAME      VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_SEQUENCE  MEDIUMINT NULL,
  CMINMSGS_SUBSYSTEM_DATE_SENT DATETIME NULL,
  CMINMSGS_SUBSYSTEM_SUBTYPE   VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_TYPE      VARCHAR(4) NULL,
  CMINMSGS_STATUS              VARCHAR(20) NULL,
  PRIMARY KEY (CMINMSGS_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Outbound: msgexchange writes requests, the upstream sends them.
-- The TINYINT columns are flags msgexchange writes as 0; they are left
-- nullable so a test can tell "written 0" from "not written".
CREATE TABLE IF NOT EXISTS COUTMSGS (
  COUTMSGS_ID               BIGINT NOT NULL AUTO_INCREMENT,
  COUTMSGS_CLOB_MSG         MEDIUMTEXT NULL,
  COUTMSGS_DATE_INSERTED    DATETIME NOT NULL,
  COUTMSGS_DATE_SENT        DATETIME NULL,
  ROUTINGID                 VARCHAR(23) NOT NULL,
  COUTMSGS_TRUEFALS_GROUP   TINYINT NULL,
  COUTMSGS_NO_MESSAGES      TINYINT NULL,
  COUTMSGS_GROUP_ORDER      TINYINT NULL,
  COUTMSGS_GROUP_ID         TINYINT NULL,
  COUTMSGS_FINAL_GROUP_IND  TINYINT NULL,
  COUTMSGS_ACK_REQD         TINYINT NULL,
  COUTMSGS_ACK_RESEND_TIMES TINYINT NULL,
  COUTMSGS_ACK_DATE_RECV    TINYINT NULL,
  COUTMSGS_ENCRYPT          TINYINT NULL,
  COUTMSGS_ERROR            TINYINT NULL,
  PRIMARY KEY (COUTMSGS_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
