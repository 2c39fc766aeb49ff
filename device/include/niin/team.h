/* niin/team.h -- placeholder: filled by the work on issue 12. */
#ifndef NIIN_TEAM_H
#define NIIN_TEAM_H
#endif
