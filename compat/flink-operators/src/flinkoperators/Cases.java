package flinkoperators;

import java.util.ArrayList;
import java.util.List;

/** Every generated case, in output order. */
final class Cases {
    private Cases() {}

    static List<CaseDef> all() {
        List<CaseDef> l = new ArrayList<>();
        GroupAggCases.all(l);
        RankCases.all(l);
        JoinCases.all(l);
        WindowCases.all(l);
        return l;
    }
}
